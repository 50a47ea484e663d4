import { Type, type TSchema } from '@sinclair/typebox';

export const MAX_VARIANTS = 8;
export const MAX_CONTROL_PERCENT = 50;
export const VARIANT_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$';

const variantSchema = <M extends TSchema>(message: M) =>
  Type.Object(
    {
      variant_id: Type.String({
        pattern: VARIANT_ID_PATTERN,
        description: '1-32 letters, digits, `_` or `-`; `control` is reserved',
      }),
      weight: Type.Integer({
        minimum: 1,
        maximum: 1_000_000,
        description: 'Share of the non-control users, relative to the other weights',
      }),
      message,
    },
    { additionalProperties: false, title: 'CampaignVariant' },
  );

const WinnerSchema = Type.Object(
  {
    test_percent: Type.Integer({
      minimum: 1,
      maximum: 100,
      description:
        'Share of the non-control users that get the variants during the test (the rest wait for the winner)',
    }),
    after: Type.Union([Type.String({ maxLength: 40 }), Type.Integer({ minimum: 0 })], {
      description:
        'The test window from the first send: an ISO 8601 duration ("PT4H", "P1D") or seconds, 1 hour to 30 days',
    }),
    metric: Type.Union([Type.Literal('opened'), Type.Literal('primary_conversion')]),
    min_confidence: Type.Optional(
      Type.Number({ minimum: 0.5, maximum: 0.999, description: 'Default 0.95 (one-sided two-proportion z-test)' }),
    ),
    fallback: Type.String({
      maxLength: 32,
      description: 'A variant id sent when no variant wins, or "none" to send nothing more',
    }),
  },
  { additionalProperties: false, title: 'CampaignWinnerRule' },
);

/**
 * The experiment fields of a campaign (rule `campaign-experiments`), checked again by the service with
 * messages. Without variants the campaign sends its `message` as before. `message` is the campaign's
 * message schema (passed in: this module sits below `campaigns.schemas.ts`).
 */
export const experimentFields = <M extends TSchema>(message: M) => ({
  variants: Type.Array(variantSchema(message), {
    maxItems: MAX_VARIANTS,
    description: `Up to ${MAX_VARIANTS} message variants; a user's variant is fixed per campaign (a hash). [] for none: every recipient gets \`message\``,
    examples: [
      [
        { variant_id: 'a', weight: 50, message: { title: 'Spring sale', body: '20% off everything this week.' } },
        {
          variant_id: 'b',
          weight: 50,
          message: { title: '20% off, this week only', body: 'Everything, until Sunday.' },
        },
      ],
    ],
  }),
  control_percent: Type.Integer({
    minimum: 0,
    maximum: MAX_CONTROL_PERCENT,
    description: `0-${MAX_CONTROL_PERCENT}: this share of the audience is the control group, which receives nothing and is recorded (\`skipped.control\`)`,
    examples: [10],
  }),
  winner: Type.Union([WinnerSchema, Type.Null()], {
    description:
      'Optional automatic winner for scheduled or recurring sends: after the test window, the rest of the audience gets the variant whose rate beats every other at min_confidence, else the fallback',
  }),
});

export const optionalExperimentFields = <M extends TSchema>(message: M) => {
  const fields = experimentFields(message);
  return {
    variants: Type.Optional(fields.variants),
    control_percent: Type.Optional(fields.control_percent),
    winner: Type.Optional(fields.winner),
  };
};
