import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import { findProject } from './projects.service.js';

const ErrorBody = Type.Object({ error: Type.String() });
const ProjectResponse = Type.Object(
  {
    project_id: Type.String(),
    name: Type.String({ description: 'The name given when the project was created (`bin/herald project create`)' }),
    created_at: Type.String({ format: 'date-time' }),
  },
  {
    title: 'Project',
    examples: [{ project_id: 'prj_4fQy8Jw2', name: 'Shop app', created_at: '2026-01-15T09:30:00.000Z' }],
  },
);

/** The signed-in project itself (the console shows its name). Projects are made and keyed with the CLI. */
export function registerProjectRoutes(fastify: FastifyInstance, deps: { db: Db }): void {
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/v1/project',
    {
      config: { auth: 'secret', rateLimitClass: 'management' },
      schema: {
        operationId: 'getProject',
        summary: 'The project the key belongs to',
        description:
          "The calling project's id, name and creation time. Projects are created with `bin/herald project create`.",
        tags: ['project'],
        security: [{ projectId: [], apiKey: [] }],
        response: { 200: ProjectResponse, 401: ErrorBody, 404: ErrorBody },
      },
    },
    async (request) => {
      const project = await findProject(deps.db, request.auth!.projectId);
      // The key was just found for this project: only a deletion racing the request gets here.
      if (!project) throw new AppError('not_found', 'PROJECT_NOT_FOUND', 'The project no longer exists');
      return { project_id: project.id, name: project.name, created_at: new Date(project.createdAt).toISOString() };
    },
  );
}
