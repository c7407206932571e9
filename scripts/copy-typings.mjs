#!/usr/bin/env node
// tsc does not copy declaration-only inputs; dist/native.d.ts imports ./binding.js, so ship it.
import { copyFileSync } from 'node:fs';

copyFileSync('ts/binding.d.ts', 'dist/binding.d.ts');
