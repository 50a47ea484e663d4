# syntax=docker/dockerfile:1
# Herald's image: Node runs the TypeScript sources itself (type stripping), so the image holds the
# sources and production dependencies only. Build: docker build -t herald .  Run: see compose.yaml.
ARG NODE_VERSION=24

# Production dependencies only; better-sqlite3 13 ships prebuilt N-API binaries (no compiler needed).
FROM node:${NODE_VERSION}-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm_config_nodedir= npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# The web console (static files, built with the dev dependencies in a stage of its own).
FROM node:${NODE_VERSION}-bookworm-slim AS console
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages ./packages
RUN npm_config_nodedir= npm ci --no-audit --no-fund --ignore-scripts
COPY console ./console
RUN node console/build.ts

FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    WORKER_METRICS_PORT=9464 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY bin ./bin
COPY src ./src
COPY --from=console /app/dist/console ./dist/console
# /docs/a2a.md serves the agent-interface guide linked from the API reference.
COPY docs/a2a.md ./docs/a2a.md
# The image's own `node` user (uid 1000) owns only the data directory.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080 9464
# /healthz of the API, or of the worker's own server when HERALD_ROLE=worker.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 CMD ["node", "bin/healthcheck"]
CMD ["node", "bin/herald", "serve"]
