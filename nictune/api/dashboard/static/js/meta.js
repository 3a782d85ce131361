// What the server wrote into the page: version, objectives, workloads, metrics (see router.py).

let cached = null;

/** The server's description of itself (an empty one if the page was opened without it). */
export function meta() {
  if (cached) return cached;
  cached = {version: "", objectives: [], workloads: [], metrics: {}, sim_note: ""};
  const block = document.getElementById("nictune-meta");
  if (block) {
    try {
      cached = {...cached, ...JSON.parse(block.textContent)};
    } catch {
      // index.html opened as a file: the placeholder is still there
    }
  }
  return cached;
}
