// Entry of a template render worker thread (src/campaigns/templates/render-pool.ts). Nothing here touches the
// database, the network or the file system: a worker only turns templates and scopes into text.
import { renderChunk, type RenderOutcome, type RenderChunk } from './render-chunk.js';

export default function render(chunk: RenderChunk): RenderOutcome[] {
  return renderChunk(chunk);
}
