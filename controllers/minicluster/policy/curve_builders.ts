/**
 * How the generated CURVE certificate is made and wrapped into its Secret: a certificate naming
 * the lead broker's host, as the Go operator's does. Tests pass their own to count calls.
 */
import type { Secret } from "kubernetes-types/core/v1.d.ts";
import { buildCurveSecret, curveMetadataFor, generateCurveCertificate } from "../children/curve.ts";
import type { MiniClusterInput } from "../children/scripts/parts/input.ts";

/** How the CURVE certificate is made and wrapped into its Secret (tests may count calls). */
export interface CurveBuilders {
  generate(mc: MiniClusterInput): string | Promise<string>;
  build(mc: MiniClusterInput, certificate: string): Secret;
}

/** A generated certificate names the lead broker's host, as the Go operator's does. */
export const defaultCurve: CurveBuilders = {
  generate: async (mc) => (await generateCurveCertificate(curveMetadataFor(mc))).text,
  build: (mc, text) => buildCurveSecret(mc, text),
};
