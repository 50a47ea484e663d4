import { randomBase62 } from '../lib/ids.js';
import type { Notice, NoticeType } from '../push/notice-outbox.js';

/** A notice as queued: its id (`webhook-id`, the same on every retry and subscription) and its exact body. */
export interface StoredNotice {
  id: string;
  type: NoticeType;
  createdAt: number;
  body: string;
}

/** Renders the body once, when the outcome commits: a retry a day later sends the same bytes. */
export function storedNotice(notice: Notice): StoredNotice {
  return {
    id: `evt_${randomBase62(24)}`,
    type: notice.type,
    createdAt: notice.at,
    body: JSON.stringify({ type: notice.type, timestamp: new Date(notice.at).toISOString(), data: notice.data }),
  };
}
