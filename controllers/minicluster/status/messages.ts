/**
 * Condition messages of bounded length. A message is read by people (`kubectl describe`) and must
 * fit the status: the CRD allows 32 KiB per condition message, and a status the API refuses would
 * leave the MiniCluster showing the status-write error instead of its problems. A list of problems
 * keeps whole items while they fit and counts the rest; any single message is cut with a count of
 * the characters left out.
 */

/** The longest condition message written (well under the CRD's 32 KiB). */
export const MAX_CONDITION_MESSAGE = 4096;

/** `message`, cut to `max` characters with the count of what was left out. */
export function boundedMessage(message: string, max = MAX_CONDITION_MESSAGE): string {
  if (message.length <= max) return message;
  // The note's own length depends on the count; 40 characters always hold it.
  const kept = max - 40;
  return `${message.slice(0, kept)}… (${message.length - kept} more characters left out)`;
}

/**
 * The messages joined with "; ", as many whole ones as fit in `max` characters (at least the first,
 * itself bounded), then how many were left out.
 */
export function joinedMessages(messages: readonly string[], max = MAX_CONDITION_MESSAGE): string {
  const note = (n: number) => `; and ${n} more problem${n === 1 ? "" : "s"} left out`;
  let out = "";
  for (const [i, m] of messages.entries()) {
    const next = i === 0 ? m : `${out}; ${m}`;
    const rest = messages.length - i - 1;
    if (next.length + (rest > 0 ? note(rest).length : 0) > max) {
      if (i === 0) return boundedMessage(m, max - note(rest).length) + (rest > 0 ? note(rest) : "");
      return out + note(messages.length - i);
    }
    out = next;
  }
  return out;
}
