/** A host no push service can reach a person at: `localhost`, `*.localhost` and the reserved `.invalid` TLD. */
const unreachableHost = (host: string): boolean => /(^|\.)(localhost|invalid)\.?$/i.test(host);

/**
 * RFC 8292 `sub`: a contact the push service can reach, a `mailto:` address or an `https:` URL
 * (Apple's service refuses anything else). Returns why `subject` is unusable, or undefined.
 */
export function vapidSubjectProblem(subject: string): string | undefined {
  const mail = /^mailto:[^@\s]+@([^@\s?]+)$/i.exec(subject);
  if (mail)
    return unreachableHost(mail[1]!)
      ? 'subject must be a reachable contact, not a .invalid or localhost address'
      : undefined;
  let url: URL;
  try {
    url = new URL(subject);
  } catch {
    return 'subject must be a mailto: address or an https URL';
  }
  if (url.protocol !== 'https:' || url.hostname === '') return 'subject must be a mailto: address or an https URL';
  return unreachableHost(url.hostname)
    ? 'subject must be a reachable contact, not a .invalid or localhost address'
    : undefined;
}
