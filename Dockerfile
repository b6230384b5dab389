# The operator image: `deno compile` builds one self-contained binary (the Deno runtime, the code
# and its npm dependencies), which runs on distroless "cc" (glibc and libgcc, no shell, no package
# manager) as a non-root user.
#
#   docker build -t minicluster-operator:0.1.0 .
#
# Stage 1 runs `deno task compile`, the same command a developer runs (deno.json holds the
# explicit permission flags, which deno compile bakes into the binary: --allow-net --allow-read
# --allow-env --allow-sys=hostname).
FROM denoland/deno:2.9.6 AS build
WORKDIR /src
# deno.json and its lock (not .tools/: that only pins the toolchain for ./task, and the image
# brings its own Deno).
COPY deno.json deno.lock ./
COPY api/ api/
COPY runtime/ runtime/
COPY controllers/ controllers/
COPY mod.ts ./
RUN deno task compile && ./dist/minicluster-operator --help > /dev/null

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/dist/minicluster-operator /minicluster-operator
# 65532 is distroless' "nonroot"; numeric, so that the kubelet can verify runAsNonRoot.
USER 65532:65532
EXPOSE 8081
ENTRYPOINT ["/minicluster-operator"]
