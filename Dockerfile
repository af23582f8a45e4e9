# syntax=docker/dockerfile:1
# Switchyard's container image (README "Containers"; docs/adr/0015-readiness-and-containers.md).
#   docker build -t switchyard .
#   docker run -p 4000:4000 -v switchyard-data:/data switchyard                 # every role, SQLite in /data
#   docker run ... switchyard start router                                     # one role (deploy/compose.yaml)
# The image runs the TypeScript sources through tsx (a runtime dependency), as `npm start` does:
# there is no build step, and what runs is what the tests ran.

ARG NODE_IMAGE=node:26-bookworm-slim

# Build stage: production dependencies only, with better-sqlite3's native addon compiled here
# against this Node (python3, make and g++ stay in this stage).
FROM ${NODE_IMAGE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# node-gyp compiles against this image's own headers (/usr/local/include/node) instead of
# downloading them.
ENV npm_config_nodedir=/usr/local
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force
# Fails the build when the addon did not build or load.
RUN node -e "new (require('better-sqlite3'))(':memory:').prepare('select 1').get()"

# Runtime stage: Node, tini, the sources and node_modules; no compiler, no npm cache.
FROM ${NODE_IMAGE}
# tini as PID 1 forwards SIGTERM to node and reaps zombies (`docker run --init` does the same);
# switchyard itself drains on SIGTERM (docs/architecture.md §2.10).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 switchyard \
 && useradd --system --uid 10001 --gid switchyard --home-dir /app --shell /usr/sbin/nologin switchyard \
 && mkdir /data && chown switchyard:switchyard /data
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY router ./router
COPY subgraphs ./subgraphs
COPY schema ./schema
COPY deploy/healthcheck.mjs ./deploy/healthcheck.mjs
# Listen on every interface of the container; SQLite (when DATABASE_URL is unset) in the /data volume.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    DATA_DIR=/data \
    LOG_FORMAT=json
VOLUME ["/data"]
USER switchyard
EXPOSE 4000 4001 4002
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 CMD ["node", "deploy/healthcheck.mjs"]
ENTRYPOINT ["/usr/bin/tini", "--", "/app/bin/switchyard"]
CMD ["start"]
