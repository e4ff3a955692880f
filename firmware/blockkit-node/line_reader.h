/*
 * Serial bytes to command lines in a fixed buffer. A line ends at \n (\r is dropped wherever it
 * is). A line longer than LINE_MAX bytes is reported once, when its first byte too many arrives,
 * and everything up to its \n is discarded: noise without newlines can never grow anything.
 */
#pragma once
#include <stdint.h>
#include "config.h"

enum LineEvent : uint8_t { LINE_NONE, LINE_READY, LINE_TOO_LONG };

class LineReader {
 public:
  /* One byte in. After LINE_READY, line()/length() hold the line until the next feed(). */
  LineEvent feed(uint8_t b);
  const char *line() const { return buf_; }
  uint8_t length() const { return len_; }

 private:
  char buf_[LINE_MAX];
  uint8_t len_ = 0;
  bool ready_ = false;
  bool discarding_ = false;
};
