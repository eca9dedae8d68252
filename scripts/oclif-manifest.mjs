// Writes oclif.manifest.json (run after tsc, by `npm run build`).
//
// Without a manifest oclif imports every command module on every start, even for --version, to
// learn the commands' names and flags: each gpuframe process then loaded the whole engine, Arrow,
// Parquet and WebGPU's dawn.node (through `devices`). With it, oclif reads this JSON and imports
// only the command that runs. It is what `oclif manifest` writes, made with @oclif/core's own
// Plugin loader (the `oclif` CLI is not a dependency).
//
// The manifest must match dist/: a command missing from it is "not found", and --help shows the
// flags it lists. So it is written by every build, and not kept in git.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Plugin } from '@oclif/core';

const root = fileURLToPath(new URL('..', import.meta.url));
const plugin = new Plugin({ root, type: 'core', isRoot: true, ignoreManifest: true, errorOnManifestCreate: true });
await plugin.load();
const path = join(root, 'oclif.manifest.json');
writeFileSync(path, `${JSON.stringify(plugin.manifest, null, 2)}\n`);
console.log(`wrote ${path}: ${Object.keys(plugin.manifest.commands).length} commands`);
