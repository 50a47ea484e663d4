/**
 * `text` without the run of `char` at its end. A loop rather than `/x+$/`, whose search is
 * quadratic on a long run of `x` that does not end the text.
 */
export function trimTrailing(text: string, char: string): string {
  let end = text.length;
  while (end > 0 && text[end - 1] === char) end--;
  return end === text.length ? text : text.slice(0, end);
}
