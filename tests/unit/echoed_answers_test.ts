import assert from "node:assert/strict";
import {
  EchoedAnswers,
  echoResource,
  watchedObjectText,
} from "../../runtime/client/echoed_answers.ts";

const object = '{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"7"}}';
const line = (type: string, text = object) => `{"type":"${type}","object":${text}}`;

Deno.test("echoed answers: the object text of added and modified lines only", () => {
  assert.equal(watchedObjectText(line("ADDED")), object);
  assert.equal(watchedObjectText(line("MODIFIED")), object);
  assert.equal(watchedObjectText(line("DELETED")), undefined);
  assert.equal(watchedObjectText(line("BOOKMARK")), undefined);
  assert.equal(
    echoResource("miniclusters.flux-framework.org/status"),
    "miniclusters.flux-framework.org",
  );
  assert.equal(echoResource("configmaps"), "configmaps");
});

Deno.test("echoed answers: an answer with exactly a watched text is that object, once", () => {
  const echoes = new EchoedAnswers();
  const parsed = JSON.parse(object);
  echoes.watched("configmaps", line("ADDED"), parsed);
  assert.equal(echoes.size, 0, "nothing is kept while no write of the kind is in flight");
  echoes.started("configmaps");
  echoes.watched("configmaps", line("ADDED"), parsed);
  echoes.watched("secrets", line("ADDED"), {});
  assert.equal(echoes.take("configmaps", object.replace('"7"', '"8"')), undefined, "a byte apart");
  assert.equal(echoes.take("secrets", object), undefined, "another kind's object");
  assert.equal(
    echoes.take("configmaps", object + "\n"),
    parsed,
    "the answer's final newline aside",
  );
  assert.equal(echoes.take("configmaps", object), undefined, "taken once");
  echoes.watched("configmaps", line("MODIFIED"), parsed);
  echoes.finished("configmaps");
  assert.equal(echoes.size, 0, "none kept once no write of the kind is in flight");
});

Deno.test("echoed answers: a burst keeps a bounded number of objects, the newest", () => {
  const echoes = new EchoedAnswers();
  echoes.started("pods");
  for (let i = 0; i < 2_000; i++) {
    echoes.watched("pods", line("MODIFIED", `{"i":${i}}`), { i });
  }
  assert.equal(echoes.size, 512);
  assert.deepEqual(echoes.take("pods", '{"i":1999}'), { i: 1999 });
  assert.equal(echoes.take("pods", '{"i":0}'), undefined);
});
