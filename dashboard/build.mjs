// Bundles the dashboard into OUT_DIR (build/dashboard/dist) (index.html, assets/app.js, assets/app.css) with esbuild
// from node_modules (package-lock.json pins it; scripts/install-deps.sh installs it).
//   node build.mjs OUT_DIR [--if-available] [--stamp=FILE]
// With --if-available (the CMake build) a missing esbuild is a warning, not an error, so that
// the C++ build never depends on npm; the server then says the page is not built. --stamp
// touches FILE after a successful build only (so a skipped build is retried by the next one).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const optional = args.includes('--if-available');
const stamp = args.find((a) => a.startsWith('--stamp='))?.slice('--stamp='.length);
if (stamp) fs.rmSync(stamp, { force: true });
const out = path.resolve(args.find((a) => !a.startsWith('--')) ?? path.join(here, '..', 'build', 'dashboard', 'dist'));
let esbuild;
try {
  esbuild = await import('esbuild');
} catch {
  console.error(`dashboard: ${optional ? 'warning: not built: ' : ''}esbuild is not installed in ` +
    `${here}/node_modules; run scripts/install-deps.sh`);
  process.exit(optional ? 0 : 1);
}
fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(path.join(out, 'assets'), { recursive: true });
await esbuild.build({
  entryPoints: { app: path.join(here, 'src', 'main.js') },
  bundle: true,
  format: 'esm',
  target: 'es2020',
  minify: true,
  sourcemap: true,
  outdir: path.join(out, 'assets'),
  logLevel: 'warning',
});
fs.copyFileSync(path.join(here, 'index.html'), path.join(out, 'index.html'));
if (stamp) fs.writeFileSync(stamp, `${new Date().toISOString()}\n`);
console.log(`dashboard: built ${out}`);
