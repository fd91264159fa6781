# syntax=docker/dockerfile:1
# One image for both gateway processes (docker-compose.yml): the default CMD runs the API,
# the worker service overrides it with `node dist/src/worker.js`.

# --- build: full dependencies, compile, bundle the workflows, then drop dev dependencies ---
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# `npm ci` rejects a lock written against a registry that lacks other platforms' optional
# packages; `npm install --no-save` then installs the same locked tree without rewriting it.
RUN npm ci --no-audit --no-fund || npm install --no-audit --no-fund --no-save
COPY . .
RUN node node_modules/typescript/bin/tsc -p tsconfig.product.json \
 && node dist/scripts/bundle-workflows.js \
 && npm prune --omit=dev --no-audit --no-fund

# --- runtime: production dependencies and compiled output only, run as the unprivileged `node` user ---
FROM node:20-bookworm-slim
# MALLOC_ARENA_MAX: glibc gives each thread of the Temporal core (Rust) an arena of its own;
# two keep the worker ~17 MiB smaller idle at no measured CPU cost (docs/benchmarks.md).
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/var/lib/gateway
WORKDIR /app
# package.json marks the project root at run time (src/config/paths.ts); src/ carries the
# non-TypeScript assets and what the source maps point at. Code stays root-owned (read-only).
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/src ./src
RUN mkdir -p /var/lib/gateway/storage && chown -R node:node /var/lib/gateway
USER node
EXPOSE 8080
# The default command is the API: ready when its store answers (/readyz, docs/operations.md).
# An image run as the worker (no HTTP surface) turns it off (docker-compose.yml).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/src/api/server.js"]
