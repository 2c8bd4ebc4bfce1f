// Writes source.sha256 next to the build: the SHA-256 of each source file, in the
// format of `sha256sum`. tests/jupyter/test_labextension.py recomputes it, so a source
// changed without a rebuild (or a build committed without its source) is caught.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';

const SOURCES = [
  'package.json',
  'tsconfig.json',
  ...readdirSync('src')
    .sort()
    .map(name => `src/${name}`)
];
const { outputDir } = JSON.parse(readFileSync('package.json', 'utf8')).jupyterlab;
const sha256 = path => createHash('sha256').update(readFileSync(path)).digest('hex');
writeFileSync(
  `${outputDir}/source.sha256`,
  SOURCES.map(path => `${sha256(path)}  ${path}\n`).join('')
);
