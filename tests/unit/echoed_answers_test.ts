import assert from "node:assert/strict";
import { EchoedAnswers, echoResource } from "../../runtime/client/echoed_answers.ts";
import { watchedObject } from "../../runtime/client/watch_lines.ts";
import { withoutManagedFields } from "../../runtime/client/wire/managed_fields.ts";

const object = '{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"7"}}';
const line = (type: string) => `{"type":"${type}","object":${object}}`;

Deno.test("echoed answers: the object text of added and modified lines only", () => {
  assert.deepEqual(watchedObject(line("ADDED")), { type: "ADDED", text: object });
  assert.deepEqual(watchedObject(line("MODIFIED")), { type: "MODIFIED", text: object });
  assert.equal(watchedObject(line("DELETED")), undefined);
  assert.equal(watchedObject(line("BOOKMARK")), undefined);
  assert.equal(
    echoResource("miniclusters.flux-framework.org/status"),
    "miniclusters.flux-framework.org",
  );
  assert.equal(echoResource("configmaps"), "configmaps");
});

Deno.test("echoed answers: an answer with exactly a watched text is that object, once", () => {
  const echoes = new EchoedAnswers();
  const parsed = JSON.parse(object);
  echoes.watched("configmaps", object, parsed);
  assert.equal(echoes.size, 0, "nothing is kept while no write of the kind is in flight");
  echoes.started("configmaps");
  echoes.watched("configmaps", object, parsed);
  echoes.watched("secrets", object, {});
  assert.equal(echoes.take("configmaps", object.replace('"7"', '"8"')), undefined, "a byte apart");
  assert.equal(echoes.take("secrets", object), undefined, "another kind's object");
  assert.equal(
    echoes.take("configmaps", object + "\n"),
    parsed,
    "the answer's final newline aside",
  );
  assert.equal(echoes.take("configmaps", object), undefined, "taken once");
  echoes.watched("configmaps", object, parsed);
  echoes.finished("configmaps");
  assert.equal(echoes.size, 0, "none kept once no write of the kind is in flight");
});

Deno.test("echoed answers: a burst keeps a bounded number of objects, the newest", () => {
  const echoes = new EchoedAnswers();
  echoes.started("pods");
  for (let i = 0; i < 2_000; i++) {
    echoes.watched("pods", `{"i":${i}}`, { i });
  }
  assert.equal(echoes.size, 512);
  assert.deepEqual(echoes.take("pods", '{"i":1999}'), { i: 1999 });
  assert.equal(echoes.take("pods", '{"i":0}'), undefined);
});

Deno.test("echoed answers: a watch that cuts managedFields keeps the cut text; the answer is cut to match", () => {
  const full =
    '{"kind":"ConfigMap","metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:data":{}}}],"name":"a","resourceVersion":"7"}}';
  const cut = withoutManagedFields(full);
  assert.equal(
    cut,
    '{"kind":"ConfigMap","metadata":{"managedFields":[],"name":"a","resourceVersion":"7"}}',
  );
  const echoes = new EchoedAnswers();
  echoes.started("configmaps");
  const parsed = JSON.parse(cut);
  echoes.watched("configmaps", cut, parsed);
  assert.equal(echoes.take("configmaps", full + "\n"), parsed);
  assert.equal(echoes.take("configmaps", full), undefined, "taken once");
});
