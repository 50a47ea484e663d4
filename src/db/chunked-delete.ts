/** One turn of the event loop for other work (and other writers' locks) between two statements of a large delete. */
export const yieldTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Runs `deleteChunk(limit)`, a statement deleting at most `limit` rows, until one deletes fewer, with a
 * turn of the event loop between them: on SQLite a statement runs on the event loop, so a delete of a
 * million rows in one statement would stop every other request for seconds. Answers the rows deleted.
 */
export async function deleteInChunks(deleteChunk: (limit: number) => Promise<number>, limit: number): Promise<number> {
  let deleted = 0;
  for (;;) {
    const n = await deleteChunk(limit);
    deleted += n;
    if (n < limit) return deleted;
    await yieldTurn();
  }
}
