# kbroker: one static binary on an empty image.
#
#   docker build -t kbroker .
#   docker run -p 9092:9092 -v kbroker-data:/data kbroker
#
# The default command runs a single combined broker + controller whose
# clients connect to localhost:9092 through the published port. For a
# cluster see deploy/docker-compose.yml and deploy/kubernetes/.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/kbroker ./cmd/kbroker \
 && mkdir /out/data

FROM scratch
COPY --from=build /out/kbroker /kbroker
# The data directory belongs to the unprivileged user; a new named volume
# mounted on it starts with this owner.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
# 9092 Kafka clients, 19092 controller quorum (Raft), 9644 Prometheus metrics.
EXPOSE 9092 19092 9644
VOLUME /data
ENTRYPOINT ["/kbroker", "serve"]
# Arguments replace this whole list; flags take precedence over KBROKER_*
# environment variables, so set with flags what this list already sets.
CMD ["--listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:19092", \
     "--advertised.listeners=PLAINTEXT://localhost:9092", \
     "--log.dirs=/data", \
     "--metrics.listen=0.0.0.0:9644"]
