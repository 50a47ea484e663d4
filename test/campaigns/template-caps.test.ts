import { Liquid } from 'liquidjs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_FILTER_CAPS } from '../../src/campaigns/templates/template-guards.js';
import {
  parseMessageTemplate,
  RenderFailure,
  renderMessage,
  type RenderScope,
  type TemplateLimits,
} from '../../src/campaigns/templates/templates.js';

// The caps on what one filter call, comparison, output or allocation may be given (templates/template-guards.ts),
// and the time budget checked between filters. `npm run bench:templates` measures each step at its cap.

const { elements: E, chars: C, allocation: A } = DEFAULT_FILTER_CAPS;
/** The render pool's budgets with its default 64 MB worker heap. */
const LIMITS: TemplateLimits = { renderTimeoutMs: 200, memoryLimit: (64 * 1024 * 1024) / 16, outputLimitBytes: 65_536 };

const scopeWith = (user: Record<string, unknown>): RenderScope => ({
  trigger: { code: 'C1' },
  user: { project_user_id: 'u1', ...user },
  campaign: { campaign_id: 'c', name: 'Spring' },
});

function render(body: string, user: Record<string, unknown> = {}, limits = LIMITS) {
  try {
    return {
      ok: true as const,
      body: renderMessage(parseMessageTemplate({ title: 't', body }), scopeWith(user), limits).body,
    };
  } catch (error) {
    if (!(error instanceof RenderFailure)) throw error;
    return { ok: false as const, reason: error.reason, detail: error.message };
  }
}

const numbers = (n: number) => Array.from({ length: n }, (_, i) => i);
const letters = (n: number) => 'ab'.repeat(Math.ceil(n / 2)).slice(0, n);

describe('template filter caps', () => {
  it.each([
    // [template, user properties at the cap, the same just over it, what the refusal names]
    [
      '{{ user.x | sort | size }}',
      { x: numbers(E / 10) },
      { x: numbers(E / 10 + 1) },
      `sort takes at most ${E / 10} elements`,
    ],
    [
      '{{ user.x | sort_natural | size }}',
      { x: numbers(E / 10) },
      { x: numbers(E / 10 + 1) },
      'sort_natural takes at most',
    ],
    ['{{ user.x | sample: 3 | size }}', { x: numbers(E / 10) }, { x: numbers(E / 10 + 1) }, 'sample takes at most'],
    ['{{ user.x | uniq | size }}', { x: numbers(E) }, { x: numbers(E + 1) }, `uniq takes at most ${E} elements`],
    [
      '{{ user.x | join: "" | size }}',
      { x: numbers(E).map(() => 'a') },
      { x: numbers(E + 1).map(() => 'a') },
      'join takes',
    ],
    ['{{ user.x | reverse | size }}', { x: numbers(E) }, { x: numbers(E + 1) }, 'reverse takes'],
    ['{{ user.x | concat: user.x | size }}', { x: numbers(E / 2) }, { x: numbers(E + 1) }, 'concat takes'],
    [
      '{{ user.x | map: "k" | size }}',
      { x: numbers(E / 2).map((k) => ({ k })) },
      { x: numbers(E / 2 + 1).map((k) => ({ k })) },
      'map takes',
    ],
    [
      '{{ user.x | where: "k", 1 | size }}',
      { x: numbers(E / 2).map((k) => ({ k })) },
      { x: numbers(E / 2 + 1).map((k) => ({ k })) },
      'where takes',
    ],
    ['{{ user.x | slice: 0, 3 | size }}', { x: numbers(E) }, { x: numbers(E + 1) }, 'slice takes'],
    [
      '{{ user.x | json | size }}',
      { x: numbers(E / 5) },
      { x: numbers(E / 5 + 1) },
      `json takes at most ${E / 5} elements`,
    ],
    [
      '{{ user.x | split: "" | size }}',
      { x: letters(A) },
      { x: letters(C + 1) },
      `split takes at most ${E} elements and ${C} characters`,
    ],
    ['{{ user.x | replace: "a", "b" | size }}', { x: letters(A) }, { x: letters(C + 1) }, 'replace takes'],
    [
      '{{ user.x | replace_first: "b", "c" | size }}',
      { x: letters(A - 2) },
      { x: letters(C + 1) },
      'replace_first takes',
    ],
    ['{{ user.x | remove: "a" | size }}', { x: letters(A - 1) }, { x: letters(C + 1) }, 'remove takes'],
    ['{{ user.x | upcase | size }}', { x: letters(A) }, { x: letters(C + 1) }, 'upcase takes'],
    [
      '{{ "now" | date: user.x | size }}',
      { x: '%Y'.repeat(C / 20) },
      { x: '%Y'.repeat(C / 20) + 'x' },
      `date takes at most ${E / 10} elements and ${C / 10} characters`,
    ],
    [
      '{% if user.x == user.x %}same{% endif %}',
      { x: numbers(E / 5) },
      { x: numbers(E / 5 + 1) },
      'the == operator takes at most',
    ],
    [
      '{% if user.x contains 3 %}in{% endif %}',
      { x: numbers(E / 5) },
      { x: numbers(E / 5 + 1) },
      'the contains operator takes at most',
    ],
  ])('%s: renders at the cap, refused just over it', (body, atCap, overCap, refusal) => {
    // Per-item filters at their cap run for a while (checked between items): time is not what is tested here.
    expect(render(body, atCap, { ...LIMITS, renderTimeoutMs: 10_000 })).toMatchObject({ ok: true });
    const over = render(body, overCap);
    expect(over).toEqual({ ok: false, reason: 'TEMPLATE_INPUT_TOO_LARGE', detail: expect.stringContaining(refusal) });
    expect(over.ok || over.detail).toMatch(/^message\.body: /);
  });

  it('counts an array each time it is reached: one array pushed fifty times is fifty of it', () => {
    const pushed = (times: number) =>
      `{% assign big = (1..1000) %}{% assign m = "" | split: "," %}{% for i in (1..${times}) %}{% assign m = m | push: big %}{% endfor %}`;
    expect(render(`${pushed(49)}{{ m | size }}`)).toEqual({ ok: true, body: '49' });
    expect(render(`${pushed(60)}{{ m | size }}`)).toMatchObject({
      reason: 'TEMPLATE_INPUT_TOO_LARGE',
      detail: expect.stringContaining(`push takes at most ${E} elements`),
    });
    // An output or a capture of such a structure is measured before it is turned into text.
    expect(render(`${pushed(49)}{{ m }}`)).toMatchObject({ reason: 'TEMPLATE_OUTPUT_TOO_LARGE' });
    expect(render(`${pushed(49)}{% capture c %}{{ m }}{% endcapture %}{{ c | size }}`)).toMatchObject({
      ok: true,
      body: String(String(Array(49).fill(numbers(1000).map((i) => i + 1))).length),
    });
  });

  it('caps one allocation: a range, or a string doubled with append', () => {
    expect(render(`{% assign r = (1..${A}) %}{{ r | size }}`)).toEqual({ ok: true, body: String(A) });
    expect(render(`{% for i in (1..${A + 1}) %}{% endfor %}done`)).toEqual({
      ok: false,
      reason: 'TEMPLATE_INPUT_TOO_LARGE',
      detail: expect.stringContaining(
        `one allocation takes at most ${A} elements or characters; this one needs ${A + 1}`,
      ),
    });
    // The whole allocation budget is still what a 100M range exceeds first.
    expect(render('{% for i in (1..100000000) %}{% endfor %}')).toMatchObject({ reason: 'TEMPLATE_MEMORY_EXCEEDED' });
    expect(
      render(
        '{% assign s = "xxxxxxxxxx" %}{% for i in (1..20) %}{% assign s = s | append: s %}{% endfor %}{{ s | size }}',
      ),
    ).toMatchObject({ reason: 'TEMPLATE_INPUT_TOO_LARGE', detail: expect.stringContaining('allocation') });
  });

  it('checks the time budget before each filter call and between the items of per-item filters', () => {
    // A thousand sorts at the cap in one output: liquidjs alone would check only after the last one.
    const chain = '| sort_natural '.repeat(1000);
    expect(render(`{% assign l = (1..${E / 10}) %}{{ l ${chain}| size }}`)).toEqual({
      ok: false,
      reason: 'TEMPLATE_RENDER_TIMEOUT',
      detail: 'message.body: rendering ran past its time budget of 200 ms and was stopped',
    });
    // One filter whose items are each an expression: stopped between two items.
    expect(
      render(
        `{% assign l = (1..${E}) %}{{ l | where_exp: "i", "i > 0" | where_exp: "i", "i > 0" | size }}`,
        {},
        {
          ...LIMITS,
          renderTimeoutMs: 10,
        },
      ),
    ).toMatchObject({ reason: 'TEMPLATE_RENDER_TIMEOUT' });
  });

  it('renders ordinary templates exactly as liquidjs does', () => {
    const plain = new Liquid({ strictVariables: true, lenientIf: true, ownPropertyOnly: true });
    const user = {
      first_name: 'ada',
      tags: ['Pro', 'beta', 'alpha', 'beta'],
      visits: 12,
      orders: [
        { sku: 'b', price: 3 },
        { sku: 'a', price: 5 },
      ],
      bio: 'Loves <b>maths</b> & engines.\nAnd poems.',
    };
    const templates = [
      'Hi {{ user.first_name | capitalize }}, {{ user.tags | sort_natural | join: ", " }}',
      '{{ user.tags | uniq | sort | reverse | join: "/" }} {{ user.tags | size }} {{ user.tags | first }} {{ user.tags | last }}',
      '{{ user.orders | map: "sku" | join }} {{ user.orders | sort: "price" | map: "sku" | join }} {{ user.orders | sum: "price" }}',
      '{{ user.orders | where: "sku", "a" | map: "price" | first }} {{ user.orders | where_exp: "o", "o.price > 3" | size }}',
      '{% assign g = user.orders | group_by: "sku" %}{% for x in g %}{{ x.name }}{{ x.items | size }}{% endfor %}',
      '{{ user.bio | strip_html | escape | newline_to_br | truncatewords: 3 }} {{ user.bio | truncate: 12 }}',
      '{{ user.bio | replace: "maths", "algebra" | replace_first: "&", "and" | remove: "<b>" | split: " " | size }}',
      '{{ user.first_name | upcase | append: "!" | prepend: ">" }} {{ user.visits | plus: 3 | times: 2 | divided_by: 5 }}',
      '{{ "Spring Sale!" | slugify }} {{ "a b" | url_encode }} {{ user.tags | json }} {{ user.tags | slice: 1, 2 | join }}',
      '{% if user.tags contains "beta" %}beta{% endif %}{% if user.visits > 10 and user.first_name == "ada" %} loyal{% endif %}',
      '{% for t in user.tags limit: 2 %}{{ forloop.index }}{{ t | downcase }}{% endfor %}{% capture c %}{{ trigger.code }}{% endcapture %}{{ c }}',
      '{% for i in (1..5) %}{{ i | modulo: 2 }}{% endfor %} {{ user.tags | concat: user.tags | compact | size }} {{ user.visits | default: 0 }}',
    ];
    for (const body of templates)
      expect(render(body, user), body).toEqual({ ok: true, body: plain.parseAndRenderSync(body, scopeWith(user)) });
  });
});
