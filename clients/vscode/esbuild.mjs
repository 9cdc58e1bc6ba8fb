// Bundle the extension and vscode-languageclient into one file (dist/extension.js),
// so the .vsix ships no node_modules. `tsc -p .` still type-checks and builds the
// unit tests into out/.
import * as esbuild from "esbuild";

await esbuild.build({
  entryPoints: ["src/extension.ts"],
  outfile: "dist/extension.js",
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  external: ["vscode"], // provided by VS Code at run time
  minify: true,
  sourcemap: false,
  logLevel: "warning",
});
