import { Type } from '@sinclair/typebox';

/**
 * A campaign's send policy (rules `frequency-caps` and `re-eligibility`): whether it is `critical`
 * (it bypasses frequency caps, and quiet hours and topics where those apply), its `tags` (which
 * tagged cap rules apply to it and count it), whether it respects the project's caps and counts
 * toward them, and when a user who received it may receive it again.
 */
export type Reeligibility = { mode: 'always' } | { mode: 'once' } | { mode: 'window'; seconds: number };

export interface SendPolicy {
  critical: boolean;
  tags: string[];
  respectCaps: boolean;
  countsTowardCaps: boolean;
  reeligibility: Reeligibility;
}

export const DEFAULT_SEND_POLICY: SendPolicy = Object.freeze({
  critical: false,
  tags: [],
  respectCaps: true,
  countsTowardCaps: true,
  reeligibility: { mode: 'always' },
}) as SendPolicy;

export const MAX_TAGS = 10;
/** A tag: 1-64 characters, a letter or digit first, then letters, digits, `_`, `.`, `:` or `-`. */
export const TAG_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$';
export const MAX_REELIGIBILITY_SECONDS = 31_536_000;

export const TagSchema = Type.String({ pattern: TAG_PATTERN, description: '1-64 characters: letters, digits, `_.:-`' });

const ReeligibilitySchema = Type.Union(
  [
    Type.Object({ mode: Type.Literal('always') }, { additionalProperties: false }),
    Type.Object({ mode: Type.Literal('once') }, { additionalProperties: false }),
    Type.Object(
      {
        mode: Type.Literal('window'),
        seconds: Type.Integer({ minimum: 1, maximum: MAX_REELIGIBILITY_SECONDS }),
      },
      { additionalProperties: false },
    ),
  ],
  {
    description:
      'When a user who received the campaign may receive it again (rule `re-eligibility`): `always` (default), `once` ever, or after `window.seconds` (1 to 31,536,000)',
  },
);

/** The wire fields, spread into the campaign's create, update and response schemas. */
export const sendPolicyFields = {
  critical: Type.Boolean({
    description:
      'Bypasses frequency caps, quiet hours and subscription topics, never the global opt-out of campaign pushes (default false; rule `frequency-caps`)',
  }),
  tags: Type.Array(TagSchema, { maxItems: MAX_TAGS, uniqueItems: true, description: 'Up to 10 distinct tags' }),
  respect_caps: Type.Boolean({ description: "Checked against the project's frequency caps (default true)" }),
  counts_toward_caps: Type.Boolean({
    description: "Its sends count toward the project's frequency caps (default true)",
  }),
  reeligibility: ReeligibilitySchema,
};

export const optionalSendPolicyFields = {
  critical: Type.Optional(sendPolicyFields.critical),
  tags: Type.Optional(sendPolicyFields.tags),
  respect_caps: Type.Optional(sendPolicyFields.respect_caps),
  counts_toward_caps: Type.Optional(sendPolicyFields.counts_toward_caps),
  reeligibility: Type.Optional(sendPolicyFields.reeligibility),
};

export interface SendPolicyWire {
  critical: boolean;
  tags: string[];
  respect_caps: boolean;
  counts_toward_caps: boolean;
  reeligibility: Reeligibility;
}

export type SendPolicyInput = Partial<SendPolicyWire>;

/** The policy with the fields the input names replaced (input already checked against `sendPolicyFields`). */
export function mergeSendPolicy(current: SendPolicy, input: SendPolicyInput): SendPolicy {
  return {
    critical: input.critical ?? current.critical,
    tags: input.tags ? [...input.tags] : current.tags,
    respectCaps: input.respect_caps ?? current.respectCaps,
    countsTowardCaps: input.counts_toward_caps ?? current.countsTowardCaps,
    reeligibility: input.reeligibility
      ? input.reeligibility.mode === 'window'
        ? { mode: 'window', seconds: input.reeligibility.seconds }
        : { mode: input.reeligibility.mode }
      : current.reeligibility,
  };
}

export function sendPolicyToWire(p: SendPolicy): SendPolicyWire {
  return {
    critical: p.critical,
    tags: p.tags,
    respect_caps: p.respectCaps,
    counts_toward_caps: p.countsTowardCaps,
    reeligibility: p.reeligibility,
  };
}

/** A stored policy (a JSON column, null for the defaults); what is not valid falls back to the default. */
export function readSendPolicy(stored: unknown): SendPolicy {
  if (stored === null || typeof stored !== 'object') return DEFAULT_SEND_POLICY;
  const s = stored as Partial<SendPolicyWire>;
  const r = s.reeligibility;
  return {
    critical: s.critical === true,
    tags: Array.isArray(s.tags) ? s.tags.filter((t): t is string => typeof t === 'string').slice(0, MAX_TAGS) : [],
    respectCaps: s.respect_caps !== false,
    countsTowardCaps: s.counts_toward_caps !== false,
    reeligibility:
      r?.mode === 'once'
        ? { mode: 'once' }
        : r?.mode === 'window' && Number.isInteger(r.seconds) && r.seconds >= 1
          ? { mode: 'window', seconds: r.seconds }
          : { mode: 'always' },
  };
}
