/**
 * A manifest's numbers as the API server sees them: Go's JSON decoding makes an integer that fits
 * in int64 an int64 and every other number a float64, so `100000000000000000000` is a float64
 * there (not an `integer` for the schema, a double for CEL) although it is an integer here.
 */

const INT64_LIMIT = 2 ** 63;

/** Whether Go decodes the JSON number `v` as an int64. */
export const isInt64 = (v: number): boolean =>
  Number.isInteger(v) && v >= -INT64_LIMIT && v < INT64_LIMIT;

/** A float64 as Go's %v prints it: the shortest digits, an exponent from 1e+06 and below 1e-04. */
export function goFloatText(v: number): string {
  if (!Number.isFinite(v)) return v > 0 ? "+Inf" : v < 0 ? "-Inf" : "NaN";
  const [digits, exponent] = v.toExponential().split("e");
  const exp = Number(exponent);
  if (exp >= -4 && exp < 6) return String(v);
  return `${digits}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
}
