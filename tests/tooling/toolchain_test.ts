/**
 * The toolchain: `deno task` with a Deno on PATH works as well as `./task`, and `./task` installs
 * the pinned Deno for the machine's architecture.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("./../..", import.meta.url));
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** This process's environment without DENO_NO_PACKAGE_JSON, as a Deno user's shell has it. */
function plainEnv(): Record<string, string> {
  const env = Deno.env.toObject();
  delete env.DENO_NO_PACKAGE_JSON;
  return env;
}

Deno.test("toolchain: deno task runs a task without DENO_NO_PACKAGE_JSON", async () => {
  // A package.json at the root made Deno resolve the `deno` npm package for every platform.
  assert.ok(!(await Deno.stat(`${ROOT}package.json`).then(() => true, () => false)));
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "cluster", "--help"],
    cwd: ROOT,
    env: plainEnv(),
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, text(out.stderr));
  assert.match(text(out.stderr), /usage: deno task cluster <up\|down\|status>/);
});

/** The Deno version ./task installs. */
const PINNED: string = JSON.parse(Deno.readTextFileSync(`${ROOT}.tools/package.json`))
  .devDependencies.deno;

Deno.test("toolchain: ./task and the image build with the same Deno", async () => {
  assert.match(
    await Deno.readTextFile(`${ROOT}Dockerfile`),
    new RegExp(`denoland/deno:${PINNED} `),
  );
});

/**
 * ./task on another machine: `uname` and `npm` stand-ins on PATH; npm only logs its arguments, so
 * the run ends with the message for a platform build that was not installed.
 */
async function taskOn(machine: string, uname: string): Promise<{ stderr: string; npm: string }> {
  const dir = await Deno.makeTempDir();
  try {
    const [s, m] = uname.split(" ");
    await Deno.writeTextFile(
      `${dir}/uname`,
      `#!/bin/sh\ncase "$1" in -s) echo ${s} ;; -m) echo ${m} ;; esac\n`,
      { mode: 0o755 },
    );
    await Deno.writeTextFile(`${dir}/npm`, `#!/bin/sh\necho "npm $*" >>"${dir}/npm.log"\n`, {
      mode: 0o755,
    });
    const out = await new Deno.Command(`${ROOT}task`, {
      args: ["check"],
      env: { ...plainEnv(), PATH: `${dir}:${Deno.env.get("PATH")}` },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 1, `${machine}: ${text(out.stderr)}`);
    const npm = await Deno.readTextFile(`${dir}/npm.log`).catch(() => "");
    return { stderr: text(out.stderr), npm };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("toolchain: ./task picks the Deno build of the machine's architecture", async () => {
  const version = PINNED;
  const arm = await taskOn("arm64", "Linux aarch64");
  assert.match(arm.stderr, new RegExp(`installing deno ${version} \\(linux-arm64-glibc\\)`));
  assert.match(arm.stderr, new RegExp(`did not install @deno/linux-arm64-glibc@${version}`));
  assert.equal(arm.npm.trim(), "npm install --prefix .tools --no-audit --no-fund");
  const mac = await taskOn("macOS", "Darwin arm64");
  assert.match(mac.stderr, new RegExp(`install Deno ${version} yourself and run: deno task check`));
  assert.equal(mac.npm, "", "nothing installed");
});
