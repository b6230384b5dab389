/** kubectl with a kubeconfig, `stdin` piped in; resolves stdout, throws with stderr. */
export async function kubectl(kubeconfig: string, args: string[], stdin?: string): Promise<string> {
  const child = new Deno.Command("kubectl", {
    args: ["--kubeconfig", kubeconfig, ...args],
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  if (!out.success) throw new Error(`kubectl ${args.join(" ")}:\n${text(out.stderr)}`);
  return text(out.stdout);
}
