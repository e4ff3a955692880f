#include "devices.h"
#include <avr/pgmspace.h>
#include "config.h"

namespace {

/* Push button, D 5: "1" pressed, "0" released, after DEBOUNCE_MS without bouncing. */
uint8_t buttonRaw, buttonStable;
uint32_t buttonSince;

void buttonSetup(uint32_t now) {
  pinMode(PIN_BUTTON, INPUT_PULLUP);
  buttonRaw = buttonStable = digitalRead(PIN_BUTTON);
  buttonSince = now;
}

bool buttonPoll(uint32_t now) {
  uint8_t raw = digitalRead(PIN_BUTTON);
  if (raw != buttonRaw) {
    buttonRaw = raw;
    buttonSince = now;
    return false;
  }
  if (raw == buttonStable || now - buttonSince < DEBOUNCE_MS) return false;
  buttonStable = raw;
  return true;
}

void buttonRead(char *da) {
  da[0] = buttonStable == LOW ? '1' : '0';
  da[1] = '\0';
}

/* Relay, D 1002: "1" on (pin HIGH), "0" off. */
bool relayOn;

void relaySetup(uint32_t) {
  digitalWrite(PIN_RELAY, LOW);
  pinMode(PIN_RELAY, OUTPUT);
}

void relayRead(char *da) {
  da[0] = relayOn ? '1' : '0';
  da[1] = '\0';
}

bool relayWrite(const char *da, uint8_t len, char *applied) {
  if (len != 1 || (da[0] != '0' && da[0] != '1')) return false;
  relayOn = da[0] == '1';
  digitalWrite(PIN_RELAY, relayOn ? HIGH : LOW);
  relayRead(applied);
  return true;
}

/* Status LED, D 999: RRGGBB on PWM pins; the built-in LED is lit while the colour is not black. */
const uint8_t LED_PINS[3] = {PIN_LED_R, PIN_LED_G, PIN_LED_B};
uint8_t ledRgb[3];

void ledApply() {
  for (uint8_t k = 0; k < 3; k++) analogWrite(LED_PINS[k], ledRgb[k]);
  digitalWrite(PIN_STATUS, (ledRgb[0] | ledRgb[1] | ledRgb[2]) ? HIGH : LOW);
}

void ledSetup(uint32_t) {
  for (uint8_t k = 0; k < 3; k++) pinMode(LED_PINS[k], OUTPUT);
  pinMode(PIN_STATUS, OUTPUT);
  ledApply();
}

char hexDigit(uint8_t v) { return v < 10 ? '0' + v : 'A' + v - 10; }

int8_t hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void ledRead(char *da) {
  for (uint8_t k = 0; k < 3; k++) {
    da[2 * k] = hexDigit(ledRgb[k] >> 4);
    da[2 * k + 1] = hexDigit(ledRgb[k] & 0x0F);
  }
  da[6] = '\0';
}

bool ledWrite(const char *da, uint8_t len, char *applied) {
  if (len != 6) return false;
  uint8_t rgb[3];
  for (uint8_t k = 0; k < 3; k++) {
    int8_t hi = hexValue(da[2 * k]), lo = hexValue(da[2 * k + 1]);
    if (hi < 0 || lo < 0) return false;
    rgb[k] = (uint8_t)(hi << 4 | lo);
  }
  for (uint8_t k = 0; k < 3; k++) ledRgb[k] = rgb[k];
  ledApply();
  ledRead(applied);
  return true;
}

/* Temperature, D 9: TMP36 on A0, degC with one decimal; reported when it moves 0.5 degC or more. */
int16_t tempTenths, tempReported;
uint32_t tempSampledAt;

int16_t tempSample() {
  uint32_t sum = 0;
  for (uint8_t k = 0; k < TEMP_SAMPLES; k++) sum += analogRead(PIN_TEMP);
  // The middle of the ADC step the samples fell in, in tenths of a millivolt:
  // (sum / n + 1/2) * AVcc / 1024 * 10.
  uint32_t mv10 = ((2UL * sum + TEMP_SAMPLES) * AVCC_MV * 10UL) / (2UL * 1024UL * TEMP_SAMPLES);
  int32_t hundredths = (int32_t)mv10 - 5000;  // 10 mV per degC: 0.1 mV is 0.01 degC
  return (int16_t)(hundredths >= 0 ? (hundredths + 5) / 10 : -((-hundredths + 5) / 10));
}

void tempSetup(uint32_t now) {
  tempTenths = tempReported = tempSample();
  tempSampledAt = now;
}

bool tempPoll(uint32_t now) {
  if (now - tempSampledAt < TEMP_EVERY_MS) return false;
  tempSampledAt = now;
  tempTenths = tempSample();
  int16_t moved = tempTenths - tempReported;
  return moved >= TEMP_STEP_TENTHS || moved <= -TEMP_STEP_TENTHS;
}

void tempRead(char *da) {
  tempReported = tempTenths;
  int16_t t = tempTenths;
  uint8_t i = 0;
  if (t < 0) {
    da[i++] = '-';
    t = -t;
  }
  utoa((unsigned)(t / 10), da + i, 10);
  while (da[i] != '\0') i++;
  da[i++] = '.';
  da[i++] = '0' + t % 10;
  da[i] = '\0';
}

const DeviceKind DEVICES[] PROGMEM = {
    /*   D   G  announce  setup        poll        read       write */
    {5, 0, true, buttonSetup, buttonPoll, buttonRead, NULL},
    {1002, 0, true, relaySetup, NULL, relayRead, relayWrite},
    {999, 0, true, ledSetup, NULL, ledRead, ledWrite},
    {9, 0, true, tempSetup, tempPoll, tempRead, NULL},
    {VERSION_D, 0, false, NULL, NULL, NULL, NULL}, /* answered by the version query */
};

}  // namespace

const uint8_t DEVICE_COUNT = sizeof DEVICES / sizeof DEVICES[0];

void deviceKind(uint8_t i, DeviceKind *out) {
  memcpy_P(out, &DEVICES[i], sizeof *out);
}

bool findWritable(uint8_t g, uint16_t d, DeviceKind *out) {
  for (uint8_t i = 0; i < DEVICE_COUNT; i++) {
    deviceKind(i, out);
    if (out->g == g && out->d == d && out->write != NULL) return true;
  }
  return false;
}
