import { Type } from '@sinclair/typebox';
import { upsertUser, upsertUserStatement } from '../../users/users.service.js';
import { Properties, ProjectUserId } from '../../users/users.schemas.js';
import { paramsValidator } from '../versions/codec.js';
import { defineSkill } from './skill.js';

const Input = Type.Object({ projectUserId: ProjectUserId, properties: Type.Optional(Properties) });
const check = paramsValidator(Input);

/** `create-user` {projectUserId, properties?} → `user-result` {userId, projectUserId, properties} (rules `a2a-skills` and `create-merges`). */
export const createUserSkill = defineSkill({
  descriptor: {
    id: 'create-user',
    name: 'Create user',
    description:
      'Creates a project user, or merges properties into an existing one, and returns all stored properties.',
    tags: ['users'],
    examples: ['{"skill":"create-user","projectUserId":"user-42","properties":{"plan":"pro"}}'],
  },
  atomic: true,
  parse: (data, field) => check(data, field),
  async run({ deps, db, projectId }, input) {
    const user = await upsertUser(db, deps.clock, projectId, input.projectUserId, input.properties ?? {});
    return {
      artifactName: 'user-result',
      data: { userId: user.id, projectUserId: user.projectUserId, properties: user.properties },
    };
  },
  write: ({ deps, projectId }, input) => ({
    artifactName: 'user-result',
    ...upsertUserStatement(deps.clock, projectId, input.projectUserId, input.properties ?? {}),
  }),
});
