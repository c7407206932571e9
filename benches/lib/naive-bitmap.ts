// The naive baseline: what a plain TypeScript port of upstream's AllocationBitmap looks like
// (a bit array, a random start, a linear probe for a clear bit).
export class NaiveBitmap {
  readonly #bits: Uint32Array;
  #count = 0;

  constructor(readonly max: number) {
    this.#bits = new Uint32Array(Math.ceil(max / 32));
  }

  has(i: number): boolean {
    return ((this.#bits[i >>> 5] ?? 0) & (1 << (i & 31))) !== 0;
  }

  allocate(i: number): boolean {
    if (i < 0 || i >= this.max) throw new RangeError(`offset ${i} out of range [0,${this.max}]`);
    if (this.has(i)) return false;
    this.#bits[i >>> 5] = (this.#bits[i >>> 5] ?? 0) | (1 << (i & 31));
    this.#count++;
    return true;
  }

  allocateNext(): number | null {
    if (this.#count >= this.max) return null;
    const start = Math.floor(Math.random() * this.max);
    for (let k = 0; k < this.max; k++) {
      const at = (start + k) % this.max;
      if (!this.has(at)) {
        this.#bits[at >>> 5] = (this.#bits[at >>> 5] ?? 0) | (1 << (at & 31));
        this.#count++;
        return at;
      }
    }
    return null;
  }

  release(i: number): void {
    if (!this.has(i)) return;
    this.#bits[i >>> 5] = (this.#bits[i >>> 5] ?? 0) & ~(1 << (i & 31));
    this.#count--;
  }

  free(): number {
    return this.max - this.#count;
  }
}
