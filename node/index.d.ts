// Type declarations for afterburn-runtime (written by hand; checked by `tsc --noEmit` on
// test/types/usage.ts).

import type { IncomingMessage, ServerResponse, Server } from 'node:http';
import type * as undici from 'undici';

/** What a handler learns about its request beyond HTTP (PROTOCOL.md §5). */
export interface RequestContext {
  /** The request id (§5.1): the watchdog's, which its access log and error bodies carry too. */
  readonly requestId: string;
  /** Whether the watchdog set a deadline (§5.2). */
  readonly hasDeadline: boolean;
  /** The deadline on the wall clock, or null without one; timeRemaining() is exact. */
  readonly deadline: Date | null;
  /** Milliseconds left before the deadline, never negative; Infinity without one. */
  timeRemaining(): number;
  /**
   * Aborts 50 ms after the deadline (reason: an Error named TimeoutError), when the watchdog
   * cancels the exchange (lanes, §2.5; reason: an Error named AbortError) and when the
   * exchange ends.
   */
  readonly signal: AbortSignal;
  /**
   * Writes one record to stderr, `[request id] text` (util.format of the arguments; every
   * line of a multi-line text is tagged), so that lines of requests served at once on
   * several lanes can be told apart. With AFTERBURN_LOG_FORMAT=json, one JSON object per
   * call instead: `{"request_id": "...", "msg": "..."}`.
   */
  log(...args: unknown[]): void;
  /**
   * The request target exactly as sent in the request line: not normalised, not decoded,
   * `?` and all (the fetch style's `request.url` is the URL parser's version of it).
   */
  readonly rawTarget: string;
  /**
   * The request's fields as received: [name, value] pairs in order, names as sent, repeated
   * names apart (the fetch style's `request.headers` joins and sorts them). Without the
   * AfterBurn-Request-Id, AfterBurn-Timeout-Ms and AfterBurn-Exchange fields (§5.3).
   */
  readonly rawHeaders: ReadonlyArray<readonly [string, string]>;
  /**
   * The request's trailer fields (a chunked body's trailer section, §5.4) as received;
   * empty until the body has been read to its end.
   */
  readonly rawTrailers: ReadonlyArray<readonly [string, string]>;
  /** The request's trailer fields as a Headers; empty until the body has been read to its end. */
  readonly trailers: undici.Headers;
  /**
   * Adds response trailers (in the listener style: `res.addTrailers` with all added so far).
   * In the fetch style they are sent on
   * a chunked response: a streamed body, or a body of any kind without a Content-Length of
   * the handler's when they were added before the Response was returned. Can be called
   * until the body's stream ends. Throws a TypeError for a name that is no token or a value
   * with CR, LF or NUL, an Error once the response is complete.
   */
  addTrailers(fields: TrailerFields): void;
}

/** Response trailers: a Headers, an object of names to values, or [name, value] pairs. */
export type TrailerFields =
  | Iterable<readonly [string, string]>
  | Record<string, string | readonly string[]>;

/** Options of serve and serveListener. */
export interface ServeOptions {
  /**
   * The most lanes (exchanges at once, §2.5) this worker serves, stated to the watchdog as
   * AfterBurn-Streams; the watchdog's `lanes` setting asks for K and min(K, maxLanes) are
   * used. An integer of at least 1; default 1024 (defaultMaxLanes).
   */
  maxLanes?: number;
  /**
   * The lanes this worker prefers when the watchdog offers lanes (its default, `lanes=auto`,
   * §2.5), stated as AfterBurn-Streams-Preferred: min(K, maxLanes, preferredLanes) are used.
   * 1 serves one exchange at a time. An integer of at least 1; default 8
   * (defaultPreferredLanes); the environment's AFTERBURN_NODE_PREFERRED_LANES wins over it.
   */
  preferredLanes?: number;
}

/** A Response from this package (undici's classes) or from Node's global copy. */
export type ResponseLike = undici.Response | globalThis.Response;

export type FetchHandler = (request: undici.Request, ctx: RequestContext) => ResponseLike | Promise<ResponseLike>;

export type RequestListener = (req: IncomingMessage, res: ServerResponse) => unknown;

/**
 * Serves a fetch-style handler on the protocol pipes until the watchdog closes them, then
 * exits the process. Call it once, when initialisation is complete: the handshake that
 * marks the worker ready is answered from then on (§3.1).
 */
export function serve(handler: FetchHandler, options?: ServeOptions): void;

/** Serves a Node request listener (an Express or Koa app, a function, an http.Server). */
export function serveListener(listener: RequestListener | Server, options?: ServeOptions): void;

/** The context of a request served by serveListener; undefined for other requests. */
export function context(req: IncomingMessage): RequestContext | undefined;

/** A Standard Schema (zod, valibot, arktype... export one): only what json() uses of it. */
export interface StandardSchemaLike<Out> {
  readonly '~standard': {
    validate(value: unknown):
      | { readonly value: Out; readonly issues?: undefined }
      | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> }> }
      | Promise<
        | { readonly value: Out; readonly issues?: undefined }
        | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> }> }>;
  };
}

/**
 * A validator for json(): a function that throws (zod's `schema.parse`, yup's
 * `validateSync`; field paths are read from the error's `issues`, `errors` or `inner`), one
 * that returns false (an Ajv validate function; paths from its `errors`), true or undefined
 * (the value passes as it is) or the value to pass on instead (typed, transformed); or a
 * Standard Schema.
 */
export type JsonValidator<In> =
  | ((value: unknown, request: undici.Request) => In | boolean | void | Promise<In | boolean | void>)
  | StandardSchemaLike<In>;

export interface JsonOptions<In, Out> {
  /** Checks (and may transform) the parsed body; a failure is 400 bad_request naming the fields. */
  validate?: JsonValidator<In>;
  /** Parses the body's text; JSON.parse by default. A throw is 400 bad_request. */
  parse?: (text: string) => unknown;
  /** Serializes the handler's result; JSON.stringify by default. */
  stringify?: (value: Out) => string;
}

/**
 * A fetch-style handler for JSON in and out. The body is read, parsed and validated before
 * the handler is called with the value; undecodable input (an empty body, bad JSON, a value
 * the validator refuses) is answered 400 bad_request with the library's error body, whose
 * message names the position or the field paths (PROTOCOL.md §8.1). The handler returns a
 * value (sent as JSON, 200, with `stringify`), undefined (204) or a Response (sent as is).
 */
export function json<In = unknown, Out = unknown>(
  handler: (value: In, request: undici.Request, ctx: RequestContext) => Out | ResponseLike | undefined | Promise<Out | ResponseLike | undefined>,
  options?: JsonOptions<In, Out>,
): FetchHandler;

/**
 * Adds a hook that runs when the worker stops serving (the watchdog closed its request pipe,
 * §9.4: shutdown or recycling; or the worker failed), before the process exits. Hooks run
 * all at once and are awaited; one that throws or rejects is logged. The watchdog bounds
 * them: a worker still running at the end of its shutdown_timeout is killed.
 */
export function onShutdown(hook: () => unknown | Promise<unknown>): void;

// ---- Handler shapes of other platforms (PROTOCOL.md §13) -----------------------------------

/** The event of the OpenFaaS Node templates (node18, node20, node22). */
export interface OpenFaaSEvent {
  /** Parsed by Content-Type: JSON an object or array, a form an object, text/* a string, any other a Buffer. */
  body: any;
  /** Node's req.headers: lower-case names, repeated values joined with ", ", Set-Cookie an array. */
  headers: Record<string, string | string[]>;
  method: string;
  /** The decoded query, a repeated name's values an array. */
  query: Record<string, string | string[]>;
  /** The path as sent, without the query. */
  path: string;
}

/** The context of the OpenFaaS Node templates: a chain that ends in succeed or fail. */
export interface OpenFaaSContext {
  status(): number | string;
  status(statusCode: number | string): OpenFaaSContext;
  headers(): Record<string, unknown>;
  headers(values: Record<string, unknown>): OpenFaaSContext;
  succeed(value?: unknown): void;
  fail(err?: unknown): void;
  /** This library's context of the request (request id, deadline, signal, log). */
  readonly afterburn: RequestContext;
}

export type OpenFaaSHandler = (event: OpenFaaSEvent, context: OpenFaaSContext,
  callback: (err: unknown, value?: unknown) => void) => unknown;

/**
 * A function written for the OpenFaaS Node templates, `async (event, context) => ...`, as a
 * fetch-style handler: `serve(openfaas(require('./handler')))`.
 * @param options rawBody: every body a Buffer (default: RAW_BODY=true in the environment)
 */
export function openfaas(handler: OpenFaaSHandler, options?: { rawBody?: boolean }): FetchHandler;

/** AWS Lambda's HTTP event, payload format 2.0 (function URLs, API Gateway HTTP APIs). */
export interface LambdaHttpEvent {
  version: '2.0';
  routeKey: string;
  rawPath: string;
  rawQueryString: string;
  cookies?: string[];
  headers: Record<string, string>;
  queryStringParameters?: Record<string, string>;
  requestContext: {
    accountId: string;
    apiId: string;
    domainName: string;
    domainPrefix: string;
    http: { method: string; path: string; protocol: string; sourceIp: string; userAgent: string };
    requestId: string;
    routeKey: string;
    stage: string;
    time: string;
    timeEpoch: number;
  };
  body?: string;
  isBase64Encoded: boolean;
}

/** The Lambda context: the request id and the time left before the deadline. */
export interface LambdaContext {
  callbackWaitsForEmptyEventLoop: boolean;
  functionName: string;
  functionVersion: string;
  invokedFunctionArn: string;
  memoryLimitInMB: string;
  awsRequestId: string;
  logGroupName: string;
  logStreamName: string;
  getRemainingTimeInMillis(): number;
  done(err?: unknown, result?: unknown): void;
  succeed(result?: unknown): void;
  fail(err?: unknown): void;
  readonly afterburn: RequestContext;
}

/** A payload 2.0 result; any other value is sent as a 200 JSON body. */
export interface LambdaHttpResult {
  statusCode: number;
  headers?: Record<string, string | number | boolean>;
  cookies?: string[];
  body?: string;
  isBase64Encoded?: boolean;
}

export type LambdaHandler = (event: LambdaHttpEvent, context: LambdaContext,
  callback: (err?: unknown, result?: unknown) => void) => unknown;

/** A Lambda HTTP handler (async, or with a callback) as a fetch-style handler. */
export function lambda(handler: LambdaHandler): FetchHandler;

/** faas-js-runtime's context of a Knative function. */
export interface CloudEventsContext {
  body: unknown;
  query: Record<string, string>;
  headers: Record<string, string>;
  method: string;
  httpVersion: string;
  httpVersionMajor: number;
  httpVersionMinor: number;
  contentType: string | undefined;
  log: Record<'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal', (...args: unknown[]) => void>;
  /** The event, a CloudEvent of the `cloudevents` package. */
  cloudevent: any;
  cloudEventResponse(data: unknown): {
    version(v: string): ReturnType<CloudEventsContext['cloudEventResponse']>;
    id(v: string): ReturnType<CloudEventsContext['cloudEventResponse']>;
    type(v: string): ReturnType<CloudEventsContext['cloudEventResponse']>;
    source(v: string): ReturnType<CloudEventsContext['cloudEventResponse']>;
    response(): any;
  };
  readonly afterburn: RequestContext;
  [queryName: string]: unknown;
}

/**
 * A Knative function, `handle(context, event)`, as a fetch-style handler; it answers with a
 * CloudEvent (sent in binary mode), `{ statusCode, headers, body }`, another value (JSON) or
 * nothing (204). Needs the `cloudevents` package (an optional peer dependency).
 */
export function cloudevents(handler: (context: CloudEventsContext, event: any) => unknown): FetchHandler;

/** This library's version, as sent in AfterBurn-Library. */
export const version: string;
/** The protocol version this library speaks. */
export const protocolVersion: string;
/** The maxLanes of serve and serveListener when none is given: 1024. */
export const defaultMaxLanes: number;
/** The preferredLanes of serve and serveListener when none is given: 8. */
export const defaultPreferredLanes: number;

// undici's classes: the requests serve() makes are instances of these.
export const Request: typeof undici.Request;
export type Request = undici.Request;
/**
 * A subclass of undici's Response that behaves as undici's, but keeps a string or bytes body
 * without making its ReadableStream until something asks for it: the fast path for
 * handlers. undici's own Response (and Node's global one) work too.
 */
export const Response: typeof undici.Response;
export type Response = undici.Response;
export const Headers: typeof undici.Headers;
export type Headers = undici.Headers;
export const FormData: typeof undici.FormData;
export type FormData = undici.FormData;
