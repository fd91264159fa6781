/**
 * Light, dark, or the system's choice (prefers-color-scheme). The choice lives in memory only
 * (no cookie, no storage), so a reload goes back to the system's choice. What the CSS follows is
 * always a resolved `data-theme` on <html> (light or dark), so the stylesheet holds each palette
 * once; on "system" it follows the system's setting as it changes.
 */
export type Theme = 'system' | 'light' | 'dark';

const systemDark = window.matchMedia('(prefers-color-scheme: dark)');
let chosen: Theme = 'system';

function paint(): void {
  document.documentElement.dataset.theme = chosen === 'system' ? (systemDark.matches ? 'dark' : 'light') : chosen;
}

systemDark.addEventListener('change', paint);

export function applyTheme(theme: Theme): void {
  chosen = theme;
  paint();
}

export function nextTheme(theme: Theme): Theme {
  return theme === 'system' ? 'light' : theme === 'light' ? 'dark' : 'system';
}

export function themeLabel(theme: Theme): string {
  return theme === 'system' ? 'Auto theme' : theme === 'light' ? 'Light theme' : 'Dark theme';
}
