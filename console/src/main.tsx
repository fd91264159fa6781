/** The console's entry point: mounts the app into #app (index.html has no inline script). */
import { render } from 'preact';
import { useState } from 'preact/hooks';
import { App } from './app';
import './styles.css';
import { applyTheme, type Theme } from './theme';

function Root() {
  const [theme, setTheme] = useState<Theme>('system');
  return (
    <App
      theme={theme}
      onTheme={(t) => {
        applyTheme(t);
        setTheme(t);
      }}
    />
  );
}

applyTheme('system');
const mount = document.getElementById('app');
if (mount) render(<Root />, mount);
