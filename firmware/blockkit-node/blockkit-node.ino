/*
 * blockkit node firmware for an Arduino Uno or Nano (ATmega328P, 16 MHz): the serial end of a
 * blockkit gateway (DESIGN.md "Serial link"). Announces its devices with PLUGIN frames, sends
 * readings on change and every 30 s, applies DEVICE commands and ACKs each one, answers the version
 * query. No heap; every buffer has a fixed size; the watchdog restarts a board that hangs.
 * Build: `npm run firmware` (firmware/Makefile); wiring and flashing: docs/hardware.md.
 */
#include <avr/pgmspace.h>
#include <avr/sleep.h>
#include <avr/wdt.h>
#include "command.h"
#include "config.h"
#include "devices.h"
#include "frames.h"
#include "line_reader.h"

/*
 * After a watchdog reset the watchdog stays armed at its shortest period (about 15 ms), shorter
 * than the core's start-up: it is disabled here, in .init3, before the C runtime and the core run.
 */
void disableWatchdogEarly() __attribute__((naked, used, section(".init3")));
void disableWatchdogEarly() {
  MCUSR = 0;
  wdt_disable();
}

static const char VERSION_DA[] PROGMEM = "BK_" BK_VERSION;

static LineReader reader;
static uint32_t lastReportAll;

static void report(const DeviceKind &k) {
  char da[DA_MAX];
  k.read(da);
  writeFrame(FRAME_DEVICE, k.g, k.d, da);
}

static void announceAll() {
  DeviceKind k;
  for (uint8_t i = 0; i < DEVICE_COUNT; i++) {
    deviceKind(i, &k);
    if (k.announce) writeFrame(FRAME_PLUGIN, k.g, k.d, NULL);
  }
}

static void reportAll() {
  DeviceKind k;
  for (uint8_t i = 0; i < DEVICE_COUNT; i++) {
    deviceKind(i, &k);
    if (k.read != NULL) report(k);
  }
}

/* One device object of a DEVICE command: ACK with the applied DA, or one ERROR. */
static void onDevice(const char *line, const DeviceCommand &cmd) {
  if (cmd.g.type == FIELD_ABSENT || cmd.v.type == FIELD_ABSENT || cmd.d.type == FIELD_ABSENT || cmd.da.type == FIELD_ABSENT) {
    writeError(ERR_BAD_JSON);
    return;
  }
  uint16_t v, d, g;
  if (!fieldUint(line, cmd.v, &v) || v != 0) {
    writeError(ERR_VENDOR);
    return;
  }
  if (!fieldUint(line, cmd.d, &d)) {
    writeError(ERR_UNKNOWN_D);
    return;
  }
  bool gOk = fieldUint(line, cmd.g, &g) && g <= 0xFF;
  if (d == VERSION_D) {
    if (!gOk || g != 0 || cmd.da.type != FIELD_STRING || !fieldEquals(line, cmd.da, PSTR("VNO"))) {
      writeError(ERR_VERSION_QUERY);
      return;
    }
    char version[sizeof VERSION_DA];
    strcpy_P(version, VERSION_DA);
    writeFrame(FRAME_ACK, 0, VERSION_D, version);
    // A gateway that opened the port late (which resets the board) missed the boot frames.
    announceAll();
    return;
  }
  DeviceKind k;
  if (!gOk || !findWritable((uint8_t)g, d, &k)) {
    writeError(ERR_UNKNOWN_D);
    return;
  }
  char applied[DA_MAX];
  if (cmd.da.type == FIELD_LITERAL || !k.write(line + cmd.da.off, cmd.da.len, applied)) {
    writeError(ERR_BAD_JSON);
    return;
  }
  writeFrame(FRAME_ACK, k.g, k.d, applied);
}

static void onLine(const char *line, uint8_t len) {
  if (len == 0) return;
  // The whole line is checked first: a line cut or broken at its end applies nothing.
  if (!parseCommandLine(line, len, NULL)) {
    writeError(ERR_BAD_JSON);
    return;
  }
  parseCommandLine(line, len, onDevice);
}

/* Idle sleep until the next interrupt (the 1 ms timer tick or a serial byte). */
static void idle() {
  cli();
  if (Serial.available() == 0) {
    sleep_enable();
    sei();  // the instruction after sei runs before any interrupt: no byte can slip in between
    sleep_cpu();
    sleep_disable();
  }
  sei();
}

void setup() {
  set_sleep_mode(SLEEP_MODE_IDLE);  // timers, the UART and the ADC keep running
  Serial.begin(BK_BAUD);
  uint32_t now = millis();
  DeviceKind k;
  for (uint8_t i = 0; i < DEVICE_COUNT; i++) {
    deviceKind(i, &k);
    if (k.setup != NULL) k.setup(now);
  }
  writeNewline();
  announceAll();
  reportAll();
  lastReportAll = millis();
  wdt_enable(WDTO_2S);
}

void loop() {
  wdt_reset();
  for (uint8_t n = 0; n < BYTES_PER_LOOP && Serial.available() > 0; n++) {
    LineEvent e = reader.feed((uint8_t)Serial.read());
    if (e == LINE_READY) onLine(reader.line(), reader.length());
    else if (e == LINE_TOO_LONG) writeError(ERR_BAD_JSON);
  }
  uint32_t now = millis();
  DeviceKind k;
  for (uint8_t i = 0; i < DEVICE_COUNT; i++) {
    deviceKind(i, &k);
    if (k.poll != NULL && k.poll(now)) report(k);
  }
  if (now - lastReportAll >= REPORT_EVERY_MS) {
    lastReportAll = now;
    reportAll();
  }
  if (Serial.available() == 0) idle();
}
