/*
 * The command lines the gateway writes: {"DEVICE":[{"G":"0","V":0,"D":1002,"DA":"1"}, ...]}.
 * A small JSON reader over a bounded line: no heap, no recursion, no copies; a field is where its
 * text sits in the line and what JSON type it had. Objects other than the devices (and arrays other
 * than DEVICE) are refused as bad JSON: the firmware has no use for them and nesting costs stack.
 */
#pragma once
#include <stdint.h>

enum FieldType : uint8_t { FIELD_ABSENT, FIELD_STRING, FIELD_NUMBER, FIELD_LITERAL };

struct Field {
  uint8_t off;    /* first byte of the text (inside the quotes for a string) */
  uint8_t len;
  FieldType type;
};

struct DeviceCommand {
  Field g, v, d, da;
};

typedef void (*DeviceHandler)(const char *line, const DeviceCommand &cmd);

/*
 * Reads one line (without its \r\n). False when it is not a JSON object with a DEVICE array of
 * objects. With a handler, calls it for each device object in order (check the whole line first
 * with a NULL handler, so that a line broken at its end applies nothing).
 */
bool parseCommandLine(const char *line, uint8_t len, DeviceHandler handler);

/* The field as a whole number 0..65535: a JSON number or a string of digits, nothing else. */
bool fieldUint(const char *line, const Field &f, uint16_t *out);

/* The field's text (a string's, without quotes) equals `text` (in flash: PSTR) exactly. */
bool fieldEquals(const char *line, const Field &f, const char *text);
