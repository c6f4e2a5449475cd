// Package rlsxds takes the rate-limit service's configuration from an xDS
// management server, as envoyproxy/ratelimit's CONFIG_TYPE=GRPC_XDS_SOTW
// does and as Envoy Gateway runs it: the server pushes
// ratelimit.config.ratelimit.v3.RateLimitConfig resources, one domain
// each, and [Watch] keeps them in force as an [rlsconfig.Config], the type
// the YAML files give.
//
// The client subscribes on the aggregated discovery service with a
// state-of-the-world stream, for every resource of [TypeURL]: what
// envoyproxy/ratelimit's client asks for, so its control planes work
// unchanged. A response that converts is acknowledged; one that does not
// is refused (NACK) with the errors as the reason, and the configuration
// in force stays. A response that was refused and comes again unchanged
// is refused again after a backoff wait, since go-control-plane's cache
// answers each refusal with the same response at once.
//
// [Convert] checks each resource as rlsconfig.Parse checks a file of the
// same content, with envoyproxy/ratelimit's meaning: the unit is the
// enum's name (UNKNOWN, the default, is no unit, as it is there), and
// floodgate's additions to the YAML format (algorithm, burst, limits) have
// no fields in the resource, so xDS configurations count as
// envoyproxy/ratelimit's do.
//
// # Wiring
//
// The command maps envoyproxy/ratelimit's settings onto [Config], starting
// from [DefaultConfig], whose values are their defaults:
//
//	CONFIG_TYPE=GRPC_XDS_SOTW                      use Watch instead of rlsconfig.Watch
//	CONFIG_GRPC_XDS_SERVER_URL                     Config.Server
//	CONFIG_GRPC_XDS_NODE_ID                        Config.NodeID
//	CONFIG_GRPC_XDS_NODE_METADATA                  Config.NodeMetadata (ParseNodeMetadata)
//	CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS      Config.Headers (ParseHeaders)
//	CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL  Config.ConnectRetryInterval
//	CONFIG_GRPC_XDS_SERVER_USE_TLS=true            Config.TLS = ClientTLS(cert, key, ca, san)
//	CONFIG_GRPC_XDS_CLIENT_TLS_CERT, _KEY          ClientTLS's certFile, keyFile
//	CONFIG_GRPC_XDS_SERVER_TLS_CACERT              ClientTLS's caFile
//	CONFIG_GRPC_XDS_SERVER_TLS_SAN                 ClientTLS's san
//	XDS_CLIENT_BACKOFF_INITIAL_INTERVAL            Config.Backoff.Initial
//	XDS_CLIENT_BACKOFF_MAX_INTERVAL                Config.Backoff.Max
//	XDS_CLIENT_BACKOFF_RANDOM_FACTOR               Config.Backoff.Factor
//	XDS_CLIENT_BACKOFF_JITTER                      Config.Backoff.Jitter
//	XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES               Config.MaxRecvMsgSize
//	MERGE_DOMAIN_CONFIG                            Config.MergeDomains
//
// Watch's callback has rlsconfig.Watch's signature, so one function can
// serve both sources: log the errors, give the configuration to the
// service. With nil errors the configuration is new; with errors it is
// the one already in force. Config.Check can refuse a configuration the
// service cannot take (the service's SetRules error, say), so that the
// server learns of it.
//
// Where this package differs from envoyproxy/ratelimit's client:
//
//   - The backoff's count starts again after a stream that delivered a
//     response; envoyproxy/ratelimit counts every failure since start.
//   - CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL paces gRPC's dialling;
//     envoyproxy/ratelimit passes it to a retry interceptor that is left
//     with no retries, so there it changes nothing.
//   - A node metadata pair without '=', a header gRPC refuses or drops,
//     and only one of the client certificate's two files are errors at
//     start; envoyproxy/ratelimit drops the pair, fails every call or
//     drops the header, and ignores the file.
//   - A refused response sent again unchanged is refused after a wait,
//     where envoyproxy/ratelimit refuses it at once, again and again.
package rlsxds
