import { describe, expect, it } from 'vitest';
import {
  parseMessageTemplate,
  renderMessage,
  RenderFailure,
  triggerPropertiesRequiredByMessage,
} from '../../src/campaigns/templates/templates.js';

const required = (title: string) => [...triggerPropertiesRequiredByMessage(parseMessageTemplate({ title }))].sort();
const scope = {
  trigger: { code: 'C1' },
  user: { project_user_id: 'u1', first_name: 'Ada' },
  campaign: { campaign_id: 'c', name: 'Spring' },
};

describe('Liquid templates (rule `templates`)', () => {
  it('finds every trigger property a message reads, by walking the AST', () => {
    expect(required('{{ trigger.a }} {{ trigger["b"] }} {{ trigger.c.d }}')).toEqual(['a', 'b', 'c']);
    expect(required('{% if trigger.vip %}{{ trigger.name }}{% endif %}{% unless trigger.u %}{% endunless %}')).toEqual([
      'name',
      'u',
      'vip',
    ]);
    expect(
      required('{% for i in (1..trigger.n) %}{{ i }}{% endfor %}{% case trigger.k %}{% when 1 %}x{% endcase %}'),
    ).toEqual(['k', 'n']);
    expect(required('{% assign x = trigger.a | upcase %}{{ user.first_name | default: trigger.fallback }}')).toEqual([
      'a',
      'fallback',
    ]);
    expect(required('{{ user[trigger.key] | default: "" }}')).toEqual(['key']);
  });

  it('treats a read through default (as the first filter) as optional', () => {
    expect(
      required(
        '{{ trigger.a | default: "x" }} {{ trigger.b | default: 1 | upcase }} {% assign c = trigger.c | default: 2 %}',
      ),
    ).toEqual([]);
    expect(required('{{ trigger.a | upcase | default: "x" }}')).toEqual(['a']);
    expect(required('{{ trigger.a | default: "x" }}{{ trigger.a }}')).toEqual(['a']);
    expect(required('{{ "trigger.a" }} {{ user.trigger }} {{ triggers.a }}')).toEqual([]);
  });

  it('renders trigger, user and campaign variables', () => {
    const parsed = parseMessageTemplate({
      title: 'Hi {{ user.first_name }}',
      body: '{{ trigger.code }} / {{ campaign.name }} / {{ user.project_user_id }}',
      landing_url: 'https://x.test/{{ trigger.code }}',
    });
    expect(renderMessage(parsed, scope)).toEqual({
      title: 'Hi Ada',
      body: 'C1 / Spring / u1',
      imageUrl: undefined,
      landingUrl: 'https://x.test/C1',
    });
  });

  it('fails one recipient with a reason when a variable is missing, a URL breaks or nothing renders', () => {
    const fail = (message: Parameters<typeof parseMessageTemplate>[0]) => {
      try {
        renderMessage(parseMessageTemplate(message), { ...scope, user: { project_user_id: 'u2' } });
      } catch (error) {
        return error instanceof RenderFailure ? error.reason : 'other';
      }
      return 'rendered';
    };
    expect(fail({ title: 'Hi {{ user.first_name }}' })).toBe('TEMPLATE_RENDER_ERROR');
    expect(fail({ title: 'Hi {{ user.first_name | default: "there" }}{% if user.vip %}!{% endif %}' })).toBe(
      'rendered',
    );
    expect(fail({ title: 'x', landing_url: '{{ user.project_user_id }}' })).toBe('INVALID_RENDERED_URL');
    expect(fail({ title: '{{ user.nickname | default: "" }}' })).toBe('EMPTY_MESSAGE');
    expect(fail({ title: '{{ user.constructor }}' })).toBe('TEMPLATE_RENDER_ERROR');
  });
});
