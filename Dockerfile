# syntax=docker/dockerfile:1
# Build: compile TypeScript with the dev dependencies, then ship production dependencies only.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
COPY src ./src
COPY test ./test
COPY scripts ./scripts
RUN npx tsc -p tsconfig.json

FROM node:22-bookworm-slim AS runtime
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000
WORKDIR /app
COPY package.json package-lock.json ./
# Native modules (argon2, bcrypt) come prebuilt in their platform packages: no build step.
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist/src ./dist/src
COPY sql ./sql
COPY bin ./bin
USER node
EXPOSE 3000 3001
# The image runs either daemon: `node dist/src/main/api.js` (default) or `node dist/src/main/tailer.js`.
CMD ["node", "--enable-source-maps", "dist/src/main/api.js"]
