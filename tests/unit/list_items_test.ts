import assert from "node:assert/strict";
import fc from "fast-check";
import { ListItemReader } from "../../runtime/client/wire/list_items.ts";

const encoder = new TextEncoder();

/** Every item and the rest of the list, the body cut into the given byte chunks. */
function read(
  body: string,
  cuts: (bytes: Uint8Array) => Uint8Array[],
  dropManagedFields = false,
) {
  const reader = new ListItemReader({ dropManagedFields });
  const items: unknown[] = [];
  for (const chunk of cuts(encoder.encode(body))) {
    for (const item of reader.push(chunk)) items.push(JSON.parse(item));
  }
  return { items, rest: reader.finish() };
}

const every = (size: number) => (bytes: Uint8Array) =>
  Array.from(
    { length: Math.ceil(bytes.length / size) },
    (_, i) => bytes.slice(i * size, (i + 1) * size),
  );

const tricky = [
  {
    metadata: { name: "a", labels: { x: "}{][" } },
    data: { s: 'quote " and \\\\ backslash \\"}' },
  },
  { metadata: { name: "é—🚀" }, spec: { items: [{ nested: [1, 2, { items: [] }] }] } },
  { metadata: { name: "c" }, data: { items: "[{" } },
];

Deno.test("list items: every chunk size, brackets in strings, escapes, UTF-8 cut anywhere", () => {
  const list = {
    kind: "ConfigMapList",
    apiVersion: "v1",
    metadata: { resourceVersion: "42", continue: "" },
    items: tricky,
  };
  for (const body of [JSON.stringify(list), JSON.stringify(list, null, 2)]) {
    for (const size of [1, 2, 3, 5, 7, 64, 1 << 16]) {
      const { items, rest } = read(body, every(size));
      assert.deepEqual(items, tricky, `chunks of ${size}`);
      assert.deepEqual(read(body, every(size), true).items, tricky, `chunks of ${size}`);
      assert.deepEqual(rest, { ...list, items: [] }, `chunks of ${size}`);
    }
  }
});

Deno.test("list items: an empty list, items before metadata, a body cut short", () => {
  assert.deepEqual(
    read('{"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[]}', every(3)),
    {
      items: [],
      rest: { kind: "PodList", metadata: { resourceVersion: "7" }, items: [] },
    },
  );
  const reordered = read(
    '{"items":[{"a":1},{"b":"]"}],"metadata":{"resourceVersion":"8"}}',
    every(4),
  );
  assert.deepEqual(reordered.items, [{ a: 1 }, { b: "]" }]);
  assert.deepEqual(reordered.rest, { items: [], metadata: { resourceVersion: "8" } });
  assert.throws(() => read('{"items":[{"a":1},{"b"', every(5)), SyntaxError);
  assert.throws(() => read("", every(5)), SyntaxError);
});

Deno.test("list items: any objects, cut at any bytes, read back as JSON.parse reads the whole", () => {
  const item = fc.dictionary(fc.string({ unit: "binary" }), fc.jsonValue()).filter((o) =>
    !JSON.stringify(o.metadata ?? null).includes('"managedFields"')
  );
  fc.assert(
    fc.property(
      fc.array(item, { maxLength: 6 }),
      fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 20 }),
      (objects, sizes) => {
        const list = { kind: "List", metadata: { resourceVersion: "1" }, items: objects };
        const body = JSON.stringify(list);
        const cuts = (bytes: Uint8Array) => {
          const chunks: Uint8Array[] = [];
          for (let at = 0, k = 0; at < bytes.length; k++) {
            const size = sizes[k % sizes.length];
            chunks.push(bytes.slice(at, at + size));
            at += size;
          }
          return chunks;
        };
        const { items, rest } = read(body, cuts);
        assert.deepEqual(items, JSON.parse(body).items);
        assert.deepEqual(rest, { ...list, items: [] });
        // No item here has metadata.managedFields: cutting them changes nothing.
        assert.deepEqual(read(body, cuts, true).items, JSON.parse(body).items);
      },
    ),
  );
});

Deno.test("list items: managedFields of an item's metadata are cut before parsing, nothing else", () => {
  const entry = { manager: "kubectl", operation: "Apply", fieldsV1: { "f:data": { "f:x": {} } } };
  const object = fc.record({
    metadata: fc.record({
      name: fc.string(),
      labels: fc.dictionary(fc.constantFrom("managedFields", "a", "b"), fc.string()),
      managedFields: fc.constantFrom([entry], [entry, entry], []),
      annotations: fc.dictionary(fc.string(), fc.string()),
    }, { requiredKeys: ["name"] }),
    spec: fc.dictionary(fc.constantFrom("managedFields", "metadata", "x"), fc.jsonValue()),
  }, { requiredKeys: ["metadata"] });
  const expected = (o: { metadata: Record<string, unknown> }) =>
    o.metadata.managedFields === undefined
      ? o
      : { ...o, metadata: { ...o.metadata, managedFields: [] } };
  fc.assert(
    fc.property(
      fc.array(object, { maxLength: 5 }),
      fc.integer({ min: 1, max: 50 }),
      fc.boolean(),
      (objects, size, pretty) => {
        const list = { kind: "List", metadata: { resourceVersion: "1" }, items: objects };
        const body = pretty ? JSON.stringify(list, null, 1) : JSON.stringify(list);
        const reader = new ListItemReader({ dropManagedFields: true });
        const items: unknown[] = [];
        for (const chunk of every(size)(encoder.encode(body))) {
          for (const item of reader.push(chunk)) items.push(JSON.parse(item));
        }
        assert.deepEqual(items, JSON.parse(body).items.map(expected));
        assert.deepEqual(reader.finish(), { ...list, items: [] });
      },
    ),
  );
});
