/**
 * A small valid baseline JPEG built in code, for the virtual camera: a grayscale image of flat
 * 8×8 blocks (only DC coefficients, so no DCT is needed), a quantisation table of ones and two tiny
 * Huffman tables. Every decoder reads it; it costs microseconds, so ten thousand cameras can answer
 * snapshot requests without image files.
 */

class BitWriter {
  private readonly bytes: number[] = [];
  private acc = 0;
  private n = 0;

  write(value: number, bits: number): void {
    for (let i = bits - 1; i >= 0; i--) {
      this.acc = (this.acc << 1) | ((value >> i) & 1);
      this.n++;
      if (this.n === 8) this.flushByte();
    }
  }

  private flushByte(): void {
    this.bytes.push(this.acc);
    // Byte stuffing: a 0xFF in entropy-coded data is followed by 0x00.
    if (this.acc === 0xff) this.bytes.push(0);
    this.acc = 0;
    this.n = 0;
  }

  /** Pads the last byte with ones (as the standard asks) and returns the data. */
  finish(): number[] {
    while (this.n !== 0) this.write(1, 1);
    return this.bytes;
  }
}

function segment(marker: number, body: number[]): number[] {
  const len = body.length + 2;
  return [0xff, marker, len >> 8, len & 0xff, ...body];
}

/** DC table: categories 0..11, every code 4 bits long (code = category). */
const DC_BITS = [0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
const DC_VALS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
/** AC table: only end-of-block, code `00`. */
const AC_BITS = [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
const AC_VALS = [0x00];

function category(v: number): number {
  let a = Math.abs(v);
  let c = 0;
  while (a > 0) {
    c++;
    a >>= 1;
  }
  return c;
}

/**
 * Encodes a grayscale image given as one luminance (0-255) per 8×8 block.
 * `shade(bx, by)` gives the block's luminance; width and height are multiples of 8.
 */
export function encodeBlockJpeg(width: number, height: number, shade: (bx: number, by: number) => number): Buffer {
  if (width % 8 !== 0 || height % 8 !== 0 || width < 8 || height < 8 || width > 65_528 || height > 65_528) {
    throw new TypeError(`jpeg size must be multiples of 8, got ${width}×${height}`);
  }
  const out: number[] = [0xff, 0xd8];
  out.push(...segment(0xe0, [0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0]));
  out.push(...segment(0xdb, [0x00, ...new Array<number>(64).fill(1)]));
  out.push(...segment(0xc0, [8, height >> 8, height & 0xff, width >> 8, width & 0xff, 1, 1, 0x11, 0]));
  out.push(...segment(0xc4, [0x00, ...DC_BITS, ...DC_VALS, 0x10, ...AC_BITS, ...AC_VALS]));
  out.push(...segment(0xda, [1, 1, 0x00, 0, 63, 0]));
  const bits = new BitWriter();
  let prev = 0;
  for (let by = 0; by < height / 8; by++) {
    for (let bx = 0; bx < width / 8; bx++) {
      const lum = Math.max(0, Math.min(255, Math.round(shade(bx, by))));
      // Forward DCT of a flat block: F(0,0) = 8 × (p − 128); the quantiser is 1.
      const dc = 8 * (lum - 128);
      const diff = dc - prev;
      prev = dc;
      const cat = category(diff);
      bits.write(cat, 4);
      if (cat > 0) bits.write(diff >= 0 ? diff : diff + (1 << cat) - 1, cat);
      bits.write(0b00, 2); // end of block: every AC coefficient is zero
    }
  }
  out.push(...bits.finish());
  out.push(0xff, 0xd9);
  return Buffer.from(out);
}

/** The virtual camera's frame `n`: a diagonal gradient that moves with n, so frames differ. */
export function cameraFrame(width: number, height: number, n: number): Buffer {
  const bw = width / 8;
  const bh = height / 8;
  return encodeBlockJpeg(width, height, (bx, by) => 40 + ((bx / bw + by / bh) * 90 + n * 13) % 180);
}
