// Free loopback ports, asked from the kernel (bind to port 0) so clusters never collide with
// each other or with whatever else runs on the machine.

export function freeLoopbackPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Distinct ports: the kernel may hand out a just-closed port again. */
export function freeLoopbackPorts(count: number): number[] {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(freeLoopbackPort());
  return [...ports];
}
