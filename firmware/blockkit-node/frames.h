/*
 * The serial frames the node writes (DESIGN.md "Serial link"): one JSON object per line, \r\n.
 * Every value written here is produced by the firmware itself (digits, hex, the version), so
 * nothing needs escaping. Nothing here allocates.
 */
#pragma once
#include <Arduino.h>

enum FrameKind : uint8_t { FRAME_DEVICE, FRAME_PLUGIN, FRAME_ACK };

/* {"<KIND>":[{"G":"<g>","V":0,"D":<d>,"DA":"<da>"}]}  (no DA when da is NULL) */
void writeFrame(FrameKind kind, uint8_t g, uint16_t d, const char *da);

/* {"ERROR":[{"CODE":<code>}]} */
void writeError(uint8_t code);

/* An empty line: ends whatever noise the other side saw before the board started. */
void writeNewline();

enum ErrorCode : uint8_t {
  ERR_BAD_JSON = 1,      /* bad JSON, a missing field, a bad value, a line over LINE_MAX bytes */
  ERR_VENDOR = 2,        /* V is not 0 */
  ERR_UNKNOWN_D = 3,     /* no writable device with that G and D */
  ERR_VERSION_QUERY = 4, /* D 1003 without G "0" and DA "VNO" */
};
