/**
 * Whether an image tag runs the gateway on a Node.js line that still gets security fixes, for
 * the tests that check the Dockerfile (test/unit/compose.test.ts, test/unit/deploy-manifests.test.ts).
 *
 * End-of-life dates of the LTS lines, from the Node.js Release Working Group's schedule
 * (github.com/nodejs/Release). Odd majors never become LTS and are left out on purpose: a
 * Dockerfile on one is refused. A major that is not listed is refused too, until its dates are
 * added here, so that moving the image to a new line is a deliberate step (docs/deployment.md,
 * "The Node.js runtime").
 */
export const NODE_LTS_END_OF_LIFE: Readonly<Record<number, string>> = {
  20: '2026-04-30',
  22: '2027-04-30',
  24: '2028-04-30',
  26: '2029-04-30',
};

/**
 * The official image's tags the Dockerfile may use: a major and a Debian slim variant (Debian 12
 * bookworm or 13 trixie; the Node 26 images may come on trixie only), nothing that floats across majors.
 */
const PINNED_BY_MAJOR = /^node:(\d+)-(?:bookworm|trixie)-slim$/;

/** The Node major of a `node:<major>-<debian>-slim` tag, or undefined for any other image. */
export function nodeMajorOf(image: string): number | undefined {
  const m = PINNED_BY_MAJOR.exec(image);
  return m ? Number(m[1]) : undefined;
}

/** What is wrong with running the gateway on `image` on `today` (none when it is a supported LTS pinned by major). */
export function nodeImageProblems(image: string, today: Date): string[] {
  const major = nodeMajorOf(image);
  if (major === undefined) return [`${image} is not node:<major>-bookworm-slim or -trixie-slim (the official image pinned by its major)`];
  const endOfLife = NODE_LTS_END_OF_LIFE[major];
  if (endOfLife === undefined) return [`Node ${major} is not a known LTS line (test/support/node-lts.ts lists them with their end of life)`];
  if (today.getTime() >= Date.parse(`${endOfLife}T23:59:59Z`)) {
    return [`Node ${major} reached end of life on ${endOfLife}: move the Dockerfile to a supported LTS (docs/deployment.md, "The Node.js runtime")`];
  }
  return [];
}
