# syntax=docker/dockerfile:1
# One image for both gateway processes (docker-compose.yml, deploy/kubernetes/): the default CMD
# runs the API, the worker overrides it with `node dist/src/worker.js`.
#
# Base image: Node 24 LTS, pinned by major (the tag follows its patch releases; security fixes
# arrive on a rebuild with --pull). Both stages use the same tag. How to move to another major,
# and what was checked on this one: docs/deployment.md, "The Node.js runtime".

# --- build: full dependencies, compile, bundle the workflows and the console, then drop dev dependencies ---
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# `npm ci` rejects a lock written against a registry that lacks other platforms' optional
# packages; `npm install --no-save` then installs the same locked tree without rewriting it.
RUN npm ci --no-audit --no-fund || npm install --no-audit --no-fund --no-save
COPY . .
RUN node node_modules/typescript/bin/tsc -p tsconfig.product.json \
 && node dist/scripts/bundle-workflows.js \
 && node scripts/build-console.mjs \
 && npm prune --omit=dev --no-audit --no-fund

# --- runtime: production dependencies and compiled output only, run as the unprivileged `node` user ---
FROM node:24-bookworm-slim
# MALLOC_ARENA_MAX: glibc gives each thread of the Temporal core (Rust) an arena of its own;
# two keep the worker ~17 MiB smaller idle at no measured CPU cost. --max-semi-space-size=8
# (MiB, V8's default 16): a young generation half as large peaked ~37 MiB lower for npm start's
# process under text saturation and ~90 MiB lower for the worker under 300 video tasks, at no
# measured CPU cost (docs/benchmarks.md, "Memory of npm start").
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    NODE_OPTIONS=--max-semi-space-size=8 \
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
# The base image's `node` user is 1000:1000; USER names it by number so that Kubernetes'
# runAsNonRoot can verify it (a name cannot be checked); the `test` below fails the build if
# the base image ever gives `node` another id (deploy/kubernetes sets runAsUser 1000).
RUN test "$(id -u node):$(id -g node)" = "1000:1000" \
 && mkdir -p /var/lib/gateway/storage && chown -R 1000:1000 /var/lib/gateway
USER 1000:1000
EXPOSE 8080
# The default command is the API: ready when its store answers (/readyz, docs/operations.md).
# An image run as the worker (no API, only its metrics listeners) turns it off (docker-compose.yml).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/src/api/server.js"]
