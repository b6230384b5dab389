// managedFields cut from an object's text before it is parsed (runtime/client/wire/managed_fields.ts):
// only metadata.managedFields, whatever else the object holds and however it is written.
import assert from "node:assert/strict";
import fc from "fast-check";
import { withoutManagedFields } from "../../runtime/client/wire/managed_fields.ts";

const entry = {
  manager: "kube-controller-manager",
  operation: "Update",
  fieldsV1: { "f:status": { 'k:{"type":"Ready"}': { ".": {}, "f:status": {} } } },
};

Deno.test("managed fields: metadata.managedFields is emptied, nothing else changes", () => {
  const text = () => fc.oneof(fc.string(), fc.constantFrom('"[{', "\\", '\\"]}'));
  const object = fc.record({
    apiVersion: fc.string(),
    managedFields: fc.jsonValue(),
    metadata: fc.record({
      name: text(),
      labels: fc.dictionary(fc.constantFrom("managedFields", "a", "]"), text()),
      annotations: fc.dictionary(fc.string(), text()),
      managedFields: fc.constantFrom([entry], [entry, entry], []),
      ownerReferences: fc.array(fc.record({ name: fc.string(), uid: fc.string() })),
    }, { requiredKeys: ["name"] }),
    spec: fc.dictionary(fc.constantFrom("managedFields", "metadata", "x"), fc.jsonValue()),
    status: fc.jsonValue(),
  }, { requiredKeys: ["metadata"] });
  fc.assert(
    fc.property(object, fc.boolean(), (o, pretty) => {
      const json = pretty ? JSON.stringify(o, null, 2) : JSON.stringify(o);
      const expected = o.metadata.managedFields === undefined
        ? o
        : { ...o, metadata: { ...o.metadata, managedFields: [] } };
      assert.deepEqual(
        JSON.parse(withoutManagedFields(json)),
        JSON.parse(JSON.stringify(expected)),
      );
    }),
  );
});

Deno.test("managed fields: a text without them, or not an object, comes back as it was", () => {
  for (
    const text of [
      '{"metadata":{"name":"a"},"spec":{"managedFields":[1]}}',
      '{"managedFields":[1],"metadata":{}}',
      '[{"metadata":{"managedFields":[1]}}]',
      '{"metadata":{"managedFields":[1',
      '{"metadata":{"name":"a',
      "",
      "null",
    ]
  ) assert.equal(withoutManagedFields(text), text);
  assert.equal(
    withoutManagedFields('{"metadata":{"managedFields":[{"a":"]"}],"name":"x"}}'),
    '{"metadata":{"managedFields":[],"name":"x"}}',
  );
});
