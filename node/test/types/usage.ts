// A small typed use of the public API; `tsc --noEmit -p test/types` must accept it. The
// lines marked to expect an error prove the declarations are not `any`.
import { serve, serveListener, context, json, Request, Response, Headers, version, defaultMaxLanes, type RequestContext, type ServeOptions, type JsonValidator } from 'afterburn-runtime';
import { invoke, invokeListener, IncompleteResponseError } from 'afterburn-runtime/testing';
import type { IncomingMessage, ServerResponse } from 'node:http';

async function handler(request: Request, ctx: RequestContext): Promise<Response> {
  const left: number = ctx.timeRemaining();
  const signal: AbortSignal = ctx.signal;
  const id: string = ctx.requestId;
  ctx.log('handling %s', request.url, { left });
  const target: string = ctx.rawTarget;
  const firstName: string | undefined = ctx.rawHeaders[0]?.[0];
  const trailerPairs: ReadonlyArray<readonly [string, string]> = ctx.rawTrailers;
  const sum: string | null = ctx.trailers.get('x-sum');
  ctx.addTrailers({ 'x-checksum': 'abc', 'x-many': ['1', '2'] });
  ctx.addTrailers([['x-a', '1']]);
  ctx.addTrailers(new Headers({ 'x-b': '2' }));
  // @ts-expect-error trailer values are strings
  ctx.addTrailers({ 'x-n': 1 });
  // @ts-expect-error rawHeaders is read-only
  ctx.rawHeaders.push(['x', 'y']);
  void [target, firstName, trailerPairs, sum];
  const headers = new Headers({ 'x-id': id, 'x-left': String(left) });
  void signal;
  return new Response(await request.text(), { headers });
}

function listener(req: IncomingMessage, res: ServerResponse): void {
  const ctx = context(req);
  res.end(ctx ? ctx.requestId : 'none');
}

export async function check(): Promise<void> {
  const res = await invoke(handler, 'http://fn/x', { method: 'POST', body: 'hi' }, { requestId: 'r', timeoutMs: 100 });
  const text: string = await res.text();
  const res2 = await invokeListener(listener, 'http://fn/');
  const status: number = res2.status;
  const err = new IncompleteResponseError();
  void [text, status, err.status, version];
  // @ts-expect-error the handler must return a Response
  serve(async () => 'not a response');
  // @ts-expect-error requestId is read-only
  (null as unknown as RequestContext).requestId = 'x';
  // A handler returning Node's global Response is accepted.
  serve(() => new globalThis.Response('ok'));
  serveListener(listener);
  serve(handler);
  const options: ServeOptions = { maxLanes: defaultMaxLanes };
  serve(handler, options);
  serveListener(listener, { maxLanes: 32 });
  serve(handler, { preferredLanes: 1, maxLanes: 16 });
  // @ts-expect-error maxLanes is a number
  serve(handler, { maxLanes: '32' });
  // @ts-expect-error no such option
  serve(handler, { lanes: 32 });

  // json(): the validator's type is the handler's input type.
  interface Order { items: { price: number }[] }
  const isOrder = (v: unknown): Order => {
    if (typeof v !== 'object' || v === null || !Array.isArray((v as Order).items)) throw new Error('not an order');
    return v as Order;
  };
  serve(json((order: Order, request, ctx) => ({ total: order.items.reduce((n, i) => n + i.price, 0), id: ctx.requestId, m: request.method }), {
    validate: isOrder,
    stringify: (value) => JSON.stringify(value.total),
  }));
  const ajvLike: JsonValidator<Order> = Object.assign((v: unknown) => Array.isArray((v as Order).items), { errors: null });
  serve(json<Order>((order) => new Response(String(order.items.length)), { validate: ajvLike, parse: JSON.parse }));
  serve(json((value) => value, {
    validate: { '~standard': { validate: (v: unknown) => ({ value: String(v) }) } },
  }));
  // @ts-expect-error the order has no field named total
  serve(json((order: Order) => order.total, { validate: isOrder }));
  // @ts-expect-error parse takes the text
  serve(json((v) => v, { parse: (text: number) => text }));
}

// Handler shapes (PROTOCOL.md §13) and the shutdown hook.
import { openfaas, lambda, cloudevents, onShutdown, type LambdaHttpResult } from 'afterburn-runtime';

export function shapes(): void {
  serve(openfaas(async (event, context) => context.status(201).headers({ 'x-a': '1' }).succeed({ path: event.path })));
  serve(lambda(async (event, context): Promise<LambdaHttpResult> => ({
    statusCode: 200,
    body: `${event.rawPath} ${context.awsRequestId} ${context.getRemainingTimeInMillis()}`,
  })));
  serve(lambda((event, context, callback) => callback(null, { statusCode: 204 })));
  serve(cloudevents(async (context, event) => {
    context.log.info('event', event);
    return { statusCode: 202, headers: { 'x-id': context.afterburn.requestId } };
  }));
  onShutdown(async () => { await new Promise((resolve) => setTimeout(resolve, 1)); });
  // @ts-expect-error a shutdown hook is a function
  onShutdown('flush');
  // @ts-expect-error the OpenFaaS context's status takes a number or a string
  openfaas(async (_event, context) => context.status({}));
}
