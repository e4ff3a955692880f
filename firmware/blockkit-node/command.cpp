#include "command.h"
#include <avr/pgmspace.h>
#include <string.h>

/* Every constant text below stays in flash (PSTR): RAM is 2 KB. */

namespace {

struct Cursor {
  const char *s;
  uint8_t n;
  uint8_t i;
};

bool isDigit(char c) { return c >= '0' && c <= '9'; }

bool isHex(char c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

void skipSpace(Cursor &c) {
  while (c.i < c.n && (c.s[c.i] == ' ' || c.s[c.i] == '\t' || c.s[c.i] == '\r' || c.s[c.i] == '\n')) c.i++;
}

/* Takes `ch` (after blanks) when it is next. */
bool take(Cursor &c, char ch) {
  skipSpace(c);
  if (c.i < c.n && c.s[c.i] == ch) {
    c.i++;
    return true;
  }
  return false;
}

bool readString(Cursor &c, Field &f) {
  if (!take(c, '"')) return false;
  uint8_t start = c.i;
  while (c.i < c.n) {
    uint8_t ch = (uint8_t)c.s[c.i];
    if (ch == '"') {
      f.off = start;
      f.len = c.i - start;
      f.type = FIELD_STRING;
      c.i++;
      return true;
    }
    if (ch < 0x20) return false;
    if (ch == '\\') {
      if (++c.i >= c.n) return false;
      char e = c.s[c.i];
      if (e == 'u') {
        for (uint8_t k = 0; k < 4; k++)
          if (++c.i >= c.n || !isHex(c.s[c.i])) return false;
      } else if (e == '\0' || !strchr_P(PSTR("\"\\/bfnrt"), e)) {
        return false;
      }
    }
    c.i++;
  }
  return false;
}

bool readDigits(Cursor &c) {
  uint8_t start = c.i;
  while (c.i < c.n && isDigit(c.s[c.i])) c.i++;
  return c.i > start;
}

bool readNumber(Cursor &c, Field &f) {
  skipSpace(c);
  uint8_t start = c.i;
  if (c.i < c.n && c.s[c.i] == '-') c.i++;
  if (!readDigits(c)) return false;
  if (c.i < c.n && c.s[c.i] == '.') {
    c.i++;
    if (!readDigits(c)) return false;
  }
  if (c.i < c.n && (c.s[c.i] == 'e' || c.s[c.i] == 'E')) {
    c.i++;
    if (c.i < c.n && (c.s[c.i] == '+' || c.s[c.i] == '-')) c.i++;
    if (!readDigits(c)) return false;
  }
  f.off = start;
  f.len = c.i - start;
  f.type = FIELD_NUMBER;
  return true;
}

bool readWord(Cursor &c, Field &f, const char *word) {
  uint8_t len = strlen_P(word);
  if (c.n - c.i < len || memcmp_P(c.s + c.i, word, len) != 0) return false;
  f.off = c.i;
  f.len = len;
  f.type = FIELD_LITERAL;
  c.i += len;
  return true;
}

/* A string, a number, true, false or null. */
bool readScalar(Cursor &c, Field &f) {
  skipSpace(c);
  if (c.i >= c.n) return false;
  char ch = c.s[c.i];
  if (ch == '"') return readString(c, f);
  if (ch == '-' || isDigit(ch)) return readNumber(c, f);
  return readWord(c, f, PSTR("true")) || readWord(c, f, PSTR("false")) || readWord(c, f, PSTR("null"));
}

/* "key": — the key's text in `key`. */
bool readKey(Cursor &c, Field &key) {
  return readString(c, key) && take(c, ':');
}

bool keyIs(const Cursor &c, const Field &key, const char *name) {
  return strlen_P(name) == key.len && memcmp_P(c.s + key.off, name, key.len) == 0;
}

bool readDevice(Cursor &c, DeviceCommand &cmd) {
  memset(&cmd, 0, sizeof cmd);
  if (!take(c, '{')) return false;
  if (take(c, '}')) return true;
  for (;;) {
    Field key, value;
    if (!readKey(c, key) || !readScalar(c, value)) return false;
    if (value.type != FIELD_LITERAL || c.s[value.off] != 'n') {  // "X":null counts as absent
      if (keyIs(c, key, PSTR("G"))) cmd.g = value;
      else if (keyIs(c, key, PSTR("V"))) cmd.v = value;
      else if (keyIs(c, key, PSTR("D"))) cmd.d = value;
      else if (keyIs(c, key, PSTR("DA"))) cmd.da = value;
    }
    if (take(c, ',')) continue;
    return take(c, '}');
  }
}

bool readDeviceArray(Cursor &c, DeviceHandler handler) {
  if (!take(c, '[')) return false;
  if (take(c, ']')) return true;
  for (;;) {
    DeviceCommand cmd;
    if (!readDevice(c, cmd)) return false;
    if (handler != NULL) handler(c.s, cmd);
    if (take(c, ',')) continue;
    return take(c, ']');
  }
}

}  // namespace

bool parseCommandLine(const char *line, uint8_t len, DeviceHandler handler) {
  Cursor c = {line, len, 0};
  bool sawDevices = false;
  if (!take(c, '{')) return false;
  if (!take(c, '}')) {
    for (;;) {
      Field key, ignored;
      if (!readKey(c, key)) return false;
      if (keyIs(c, key, PSTR("DEVICE"))) {
        if (!readDeviceArray(c, handler)) return false;
        sawDevices = true;
      } else if (!readScalar(c, ignored)) {
        return false;
      }
      if (take(c, ',')) continue;
      if (take(c, '}')) break;
      return false;
    }
  }
  skipSpace(c);
  return sawDevices && c.i == c.n;
}

bool fieldUint(const char *line, const Field &f, uint16_t *out) {
  if ((f.type != FIELD_NUMBER && f.type != FIELD_STRING) || f.len == 0 || f.len > 5) return false;
  uint32_t v = 0;
  for (uint8_t k = 0; k < f.len; k++) {
    char ch = line[f.off + k];
    if (!isDigit(ch)) return false;
    v = v * 10 + (uint8_t)(ch - '0');
  }
  if (v > 0xFFFF) return false;
  *out = (uint16_t)v;
  return true;
}

bool fieldEquals(const char *line, const Field &f, const char *text) {
  return f.type != FIELD_ABSENT && strlen_P(text) == f.len && memcmp_P(line + f.off, text, f.len) == 0;
}
