// The careful baseline: what a user who cares about speed writes in plain TypeScript. Same
// random-scan rule as upstream (a random start, then the first free slot at or after it,
// wrapping), but a word at a time: a full word is skipped in one test and the free bit is found
// with Math.clz32, so a nearly full map costs max/32 steps at worst, not max.
export class CarefulBitmap {
  readonly #words: Uint32Array;
  readonly #max: number;
  #count = 0;

  constructor(max: number) {
    if (max > 2 ** 31) throw new RangeError('CarefulBitmap holds at most 2^31 slots');
    this.#max = max;
    this.#words = new Uint32Array(Math.ceil(max / 32));
    // Bits past `max` in the last word are marked taken, so the scan never returns them.
    if (max % 32 !== 0) this.#words[this.#words.length - 1] = ~0 << (max % 32);
  }

  has(i: number): boolean {
    return i >= 0 && i < this.#max && ((this.#words[i >>> 5] as number) & (1 << (i & 31))) !== 0;
  }

  allocate(i: number): boolean {
    if (i < 0 || i >= this.#max) throw new RangeError(`offset ${i} out of range [0,${this.#max}]`);
    const w = i >>> 5;
    const bit = 1 << (i & 31);
    const word = this.#words[w] as number;
    if ((word & bit) !== 0) return false;
    this.#words[w] = word | bit;
    this.#count++;
    return true;
  }

  allocateNext(): number | null {
    if (this.#count >= this.#max) return null;
    const words = this.#words;
    const start = Math.floor(Math.random() * this.#max);
    let w = start >>> 5;
    // Free bits of the start word at or after the start; whole words after it.
    let free = ~(words[w] as number) & (~0 << (start & 31));
    for (let k = 0; k <= words.length; k++) {
      if (free !== 0) {
        const bit = free & -free;
        words[w] = (words[w] as number) | bit;
        this.#count++;
        return (w << 5) | (31 - Math.clz32(bit));
      }
      w = w + 1 === words.length ? 0 : w + 1;
      free = ~(words[w] as number);
    }
    return null;
  }

  release(i: number): void {
    if (!this.has(i)) return;
    this.#words[i >>> 5] = (this.#words[i >>> 5] as number) & ~(1 << (i & 31));
    this.#count--;
  }

  free(): number {
    return this.#max - this.#count;
  }
}
