/**
 * Golden-file assertions for pure builders: the expected output lives in tests/golden/<name>,
 * reviewed like code. `UPDATE_GOLDEN=1 deno test ...` rewrites the files after an intended change.
 */
import { stringify } from "yaml";
import assert from "node:assert/strict";

const GOLDEN_DIR = new URL("./golden/", import.meta.url);

/** Compares `actual` (a string, or an object rendered as YAML) with tests/golden/<name>. */
export async function assertGolden(name: string, actual: unknown): Promise<void> {
  const text = typeof actual === "string" ? actual : stringify(actual, { sortMapEntries: false });
  const url = new URL(name, GOLDEN_DIR);
  if (Deno.env.get("UPDATE_GOLDEN") === "1") {
    await Deno.mkdir(new URL(".", url), { recursive: true });
    await Deno.writeTextFile(url, text);
    return;
  }
  let expected: string;
  try {
    expected = await Deno.readTextFile(url);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new Error(`golden file tests/golden/${name} is missing; run with UPDATE_GOLDEN=1`);
    }
    throw e;
  }
  assert.equal(
    text,
    expected,
    `output differs from tests/golden/${name} (UPDATE_GOLDEN=1 rewrites it)`,
  );
}
