/** Small pieces every page uses: links, error notes, the status badge, the progress bar. */
import type { ComponentChildren } from 'preact';
import { ApiError } from '../api';
import { linkClick } from '../router';
import type { TaskStatus } from '../types';

export function Link(props: { href: string; children: ComponentChildren; class?: string; current?: boolean }) {
  return (
    <a href={props.href} onClick={linkClick} class={props.class} aria-current={props.current ? 'page' : undefined}>
      {props.children}
    </a>
  );
}

export function ErrorNote({ error }: { error: Error | undefined }) {
  if (!error) return null;
  const status = error instanceof ApiError ? `${error.status}${error.code ? ` ${error.code}` : ''}: ` : '';
  return (
    <p class="error" role="alert">
      {status}
      {error.message}
    </p>
  );
}

export function Status({ status }: { status: TaskStatus }) {
  return <span class={`badge badge-${status}`}>{status}</span>;
}

export function Progress({ value, label }: { value: number; label: string }) {
  return (
    <span class="progress">
      <progress max={100} value={value} aria-label={label} />
      <span class="progress-value">{value} %</span>
    </span>
  );
}

export function Card(props: { title: string; value: string; note?: string }) {
  return (
    <div class="card">
      <div class="card-title">{props.title}</div>
      <div class="card-value">{props.value}</div>
      {props.note ? <div class="card-note">{props.note}</div> : null}
    </div>
  );
}

export function Page(props: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-header">
        <h1 id="page-title">{props.title}</h1>
        {props.actions}
      </header>
      {props.children}
    </section>
  );
}
