/*
 * The device model: one row of DEVICES per kind of on-board device, and a few small functions.
 * Adding a kind is one row here (devices.cpp) and its functions; the rest of the firmware only
 * walks the table: PLUGIN frames, readings on change and every 30 s, commands and their ACK.
 */
#pragma once
#include <Arduino.h>

#define DA_MAX 12 /* longest DA the firmware produces, with its NUL */
#define VERSION_D 1003

struct DeviceKind {
  uint16_t d;     /* Ninja device id */
  uint8_t g;      /* port; "0" for the devices on the board */
  bool announce;  /* a PLUGIN frame at boot and after each version query */
  /* Pins and first value. NULL: nothing to set up. */
  void (*setup)(uint32_t now);
  /* Samples the device; true when its value changed enough to be reported now. NULL: never. */
  bool (*poll)(uint32_t now);
  /* The value to report, as DA text (at most DA_MAX bytes with the NUL). NULL: no readings. */
  void (*read)(char *da);
  /* Applies a command's DA (its raw JSON text, len bytes); writes the applied value as DA text.
   * False when the value is not one the device takes. NULL: the device takes no commands. */
  bool (*write)(const char *da, uint8_t len, char *applied);
};

extern const uint8_t DEVICE_COUNT;

/* Row i of the table (the table lives in flash). */
void deviceKind(uint8_t i, DeviceKind *out);

/* The device with this G and D that takes commands; false when there is none. */
bool findWritable(uint8_t g, uint16_t d, DeviceKind *out);
