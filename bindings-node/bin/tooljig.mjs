#!/usr/bin/env node
// The `tooljig` command line (docs/operators.md), the same as the Rust binary's.
import { cli } from '../lib/native.mjs'

process.exitCode = cli(['tooljig', ...process.argv.slice(2)])
