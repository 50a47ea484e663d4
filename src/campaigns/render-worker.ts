// Entry of a template render worker thread (src/campaigns/render-pool.ts). Nothing here touches the
// database, the network or the file system: a worker only turns templates and scopes into text.
import { renderBatch, type RenderOutcome, type RenderTask } from './render-batch.js';

export default function render(task: RenderTask): RenderOutcome[] {
  return renderBatch(task);
}
