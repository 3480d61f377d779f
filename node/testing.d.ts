// Type declarations for afterburn-runtime/testing.

import type * as undici from 'undici';
import type { FetchHandler, RequestListener } from './index';

export interface InvokeOptions {
  /** Plays the watchdog's AfterBurn-Request-Id (§5.1); one is made without it. */
  requestId?: string;
  /** Plays the watchdog's AfterBurn-Timeout-Ms (§5.2); no deadline without it. */
  timeoutMs?: number;
  /** Receives the library's log records (handler stacks) and ctx.log lines; default: process.stderr. */
  log?: (text: string) => void;
  /** AFTERBURN_MAX_HEADER_BYTES and AFTERBURN_MAX_BODY_BYTES, as the worker would see them. */
  env?: Record<string, string>;
}

/** Rejection of invoke/invokeListener when the response started and then failed (§8.3). */
export class IncompleteResponseError extends Error {
  readonly status: number;
}

/** Calls a fetch-style handler in-process, through the worker's core, and returns its response. */
export function invoke(
  handler: FetchHandler,
  input: string | URL | undici.Request,
  init?: undici.RequestInit,
  options?: InvokeOptions,
): Promise<undici.Response>;

/** As invoke, for a Node request listener (an Express or Koa app, a function). */
export function invokeListener(
  listener: RequestListener,
  input: string | URL | undici.Request,
  init?: undici.RequestInit,
  options?: InvokeOptions,
): Promise<undici.Response>;
