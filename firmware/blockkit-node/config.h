/*
 * blockkit node firmware: fixed wiring and timing (docs/hardware.md has the wiring table).
 * Arduino Uno or Nano, ATmega328P at 16 MHz.
 */
#pragma once

#define BK_VERSION "1.0.0"        /* the version query answers "BK_" BK_VERSION */
#define BK_BAUD 9600UL            /* 8N1, lines end in \r\n */

#define PIN_BUTTON 2              /* INPUT_PULLUP, pressed = LOW */
#define PIN_RELAY 7               /* HIGH = on */
#define PIN_LED_R 9               /* PWM (timer 1) */
#define PIN_LED_G 10              /* PWM (timer 1) */
#define PIN_LED_B 11              /* PWM (timer 2) */
#define PIN_STATUS 13             /* the built-in LED: lit while the colour is not 000000 */
#define PIN_TEMP A0               /* TMP36, AREF = AVcc (5 V): degC = (mV - 500) / 10 */

#define AVCC_MV 5000UL
#define REPORT_EVERY_MS 30000UL   /* every reading again, whether it changed or not */
#define DEBOUNCE_MS 30U           /* the button must stay put this long */
#define TEMP_EVERY_MS 500U        /* temperature sampling period */
#define TEMP_SAMPLES 16U          /* ADC samples averaged per temperature reading */
#define TEMP_STEP_TENTHS 5        /* a temperature moving 0.5 degC or more is reported */

#define LINE_MAX 127              /* longest command line, bytes without its \r\n */
#define BYTES_PER_LOOP 64         /* serial bytes taken per loop(), so devices and the watchdog keep up */
